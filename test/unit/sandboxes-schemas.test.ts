import { describe, expect, it } from "vitest";
import { ActivityRequest } from "../../lib/claims/activity.ts";
import { demandWorthRecording } from "../../lib/claims/demand.ts";
import {
  CreateSandboxRequest,
  HistoryQuery,
  ListSandboxesQuery,
  TimeoutRequest,
} from "../../lib/claims/schemas.ts";
import { waitSeconds } from "../../lib/claims/wait-seconds.ts";
import { type ApiIssue, parseWith } from "../../lib/crd/parse-with.ts";
import type { HistoryQuery as StoreHistoryQuery } from "../../lib/history/store.ts";
import { shouldRecordActivity } from "../../lib/lifecycle/activity-throttle.ts";

function issues(schema: Parameters<typeof parseWith>[0], input: unknown): ApiIssue[] {
  const parsed = parseWith(schema, input);
  if (parsed.ok) throw new Error(`expected issues, got ${JSON.stringify(parsed.value)}`);
  return parsed.issues;
}

const POOL = { pool: "team-a/python" };

describe("CreateSandboxRequest", () => {
  it("accepts a full request and keeps it as is", () => {
    const body = {
      template: "python-3.12",
      containerImages: { main: "registry.example/app:2", proxy: "proxy:1" },
      envVars: { TOKEN: "x", _under: "", A1: "=" },
      metadata: { run: "42", "a.b/c": "v" },
      idleTimeout: 0,
      startupTimeout: 3600,
      wait: true,
      waitTimeout: 300,
    };
    expect(parseWith(CreateSandboxRequest, body)).toEqual({ ok: true, value: body });
  });

  it("accepts the smallest requests", () => {
    expect(parseWith(CreateSandboxRequest, POOL)).toEqual({ ok: true, value: POOL });
    expect(parseWith(CreateSandboxRequest, { template: "t", image: "app:1" }).ok).toBe(true);
  });

  it.each<[string, unknown, ApiIssue[]]>([
    ["not an object", [], [{ path: "", message: "must be a JSON object" }]],
    ["null", null, [{ path: "", message: "must be a JSON object" }]],
    [
      "neither pool nor template",
      {},
      [
        {
          path: "",
          message:
            'one of "pool" (namespace/name), "env" (namespace/name) or "template" (a SandboxTemplate name) is required',
        },
      ],
    ],
    [
      "both pool and template",
      { ...POOL, template: "t" },
      [{ path: "", message: 'give only one of "pool", "env" and "template"' }],
    ],
    [
      "both env and pool",
      { ...POOL, env: "team-a/python" },
      [{ path: "", message: 'give only one of "pool", "env" and "template"' }],
    ],
    [
      "an env that is no reference",
      { env: "python" },
      [{ path: "env", message: 'must be "namespace/name" of a SandboxEnv, e.g. "team-a/python"' }],
    ],
    [
      "both image and containerImages",
      { ...POOL, image: "a:1", containerImages: { main: "b:1" } },
      [{ path: "", message: 'give either "image" (the main container) or "containerImages", not both' }],
    ],
    ["an unknown field", { ...POOL, idle_timeout: 5 }, [{ path: "idle_timeout", message: "unknown field" }]],
  ])("%s", (_, input, expected) => {
    expect(issues(CreateSandboxRequest, input)).toEqual(expected);
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    ["pool without a slash", { pool: "python" }, "pool", 'must be "namespace/name"'],
    ["pool with two slashes", { pool: "a/b/c" }, "pool", 'must be "namespace/name"'],
    ["pool with uppercase", { pool: "A/b" }, "pool", 'must be "namespace/name"'],
    ["pool not a string", { pool: 1 }, "pool", "must be a string"],
    ["template not a name", { template: "Py_3" }, "template", "SandboxTemplate"],
    ["image with a space", { ...POOL, image: "app 1" }, "image", "image reference"],
    ["empty image", { ...POOL, image: "" }, "image", "image reference"],
    ["containerImages empty", { ...POOL, containerImages: {} }, "containerImages", "at least one container"],
    [
      "containerImages bad name",
      { ...POOL, containerImages: { Main: "a:1" } },
      "containerImages.Main",
      "container name",
    ],
    [
      "containerImages bad image",
      { ...POOL, containerImages: { main: 1 } },
      "containerImages.main",
      "must be a string",
    ],
    ["envVars bad name", { ...POOL, envVars: { "1X": "v" } }, "envVars[1X]", "environment variable name"],
    [
      "envVars name with a dash",
      { ...POOL, envVars: { "A-B": "v" } },
      "envVars[A-B]",
      "environment variable name",
    ],
    ["envVars value not a string", { ...POOL, envVars: { A: 1 } }, "envVars.A", "must be a string"],
    ["envVars not an object", { ...POOL, envVars: ["A=1"] }, "envVars", "object of name → value"],
    ["metadata empty key", { ...POOL, metadata: { "": "v" } }, "metadata[]", "must not be empty"],
    [
      "metadata key of 64",
      { ...POOL, metadata: { ["k".repeat(64)]: "v" } },
      `metadata.${"k".repeat(64)}`,
      "at most 63",
    ],
    ["metadata value of 257", { ...POOL, metadata: { k: "v".repeat(257) } }, "metadata.k", "at most 256"],
    ["idleTimeout negative", { ...POOL, idleTimeout: -1 }, "idleTimeout", "at least 0"],
    ["idleTimeout over a week", { ...POOL, idleTimeout: 604_801 }, "idleTimeout", "at most 604800"],
    ["idleTimeout fractional", { ...POOL, idleTimeout: 1.5 }, "idleTimeout", "whole number"],
    ["idleTimeout as a string", { ...POOL, idleTimeout: "600" }, "idleTimeout", "number of seconds"],
    ["startupTimeout 0", { ...POOL, startupTimeout: 0 }, "startupTimeout", "at least 1"],
    ["startupTimeout over an hour", { ...POOL, startupTimeout: 3601 }, "startupTimeout", "at most 3600"],
    ["wait not a boolean", { ...POOL, wait: "yes" }, "wait", "true or false"],
    ["waitTimeout over 5 minutes", { ...POOL, waitTimeout: 301 }, "waitTimeout", "at most 300"],
    ["waitTimeout negative", { ...POOL, waitTimeout: -1 }, "waitTimeout", "at least 0"],
  ])("%s", (_, input, path, message) => {
    const found = issues(CreateSandboxRequest, input);
    expect(found).toHaveLength(1);
    expect(found[0]?.path).toBe(path);
    expect(found[0]?.message).toContain(message);
  });

  it("map sizes: 100 env vars and 32 metadata entries at most", () => {
    const map = (n: number, prefix: string) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, "v"]));
    expect(
      parseWith(CreateSandboxRequest, { ...POOL, envVars: map(100, "V"), metadata: map(32, "m") }).ok,
    ).toBe(true);
    expect(issues(CreateSandboxRequest, { ...POOL, envVars: map(101, "V"), metadata: map(33, "m") })).toEqual(
      [
        { path: "envVars", message: "must have at most 100 entries" },
        { path: "metadata", message: "must have at most 32 entries" },
      ],
    );
  });

  it("reports every problem at once, field issues and the pool/template rule", () => {
    const found = issues(CreateSandboxRequest, { idleTimeout: -1, extra: 1 });
    expect(found.map((i) => i.path)).toEqual(["idleTimeout", "extra", ""]);
  });
});

describe("ListSandboxesQuery", () => {
  it("defaults limit to 100 and converts it to a number", () => {
    expect(parseWith(ListSandboxesQuery, {})).toEqual({ ok: true, value: { limit: 100 } });
    expect(
      parseWith(ListSandboxesQuery, {
        pool: "team-a/python",
        phase: "running",
        metadata: "run=42,task=swe",
        limit: "500",
        continue: "tok",
        unrelated: "ignored",
      }),
    ).toEqual({
      ok: true,
      value: {
        pool: "team-a/python",
        phase: "running",
        metadata: "run=42,task=swe",
        limit: 500,
        continue: "tok",
      },
    });
  });

  it.each(["starting", "running", "stopping", "failed"])("phase %s is accepted", (phase) => {
    expect(parseWith(ListSandboxesQuery, { phase }).ok).toBe(true);
  });

  it.each<[string, Record<string, string>, ApiIssue[]]>([
    [
      "phase idle (idle pods are not sandboxes)",
      { phase: "idle" },
      [{ path: "phase", message: "must be one of starting, running, stopping, failed, paused" }],
    ],
    [
      "pool without a namespace",
      { pool: "python" },
      [{ path: "pool", message: 'must be "namespace/name" of a SandboxPool, e.g. "team-a/python"' }],
    ],
    [
      "metadata not k=v",
      { metadata: "run" },
      [{ path: "metadata", message: 'metadata filter entry "run" is not key=value' }],
    ],
    ["limit 0", { limit: "0" }, [{ path: "limit", message: "must be at least 1" }]],
    ["limit 501", { limit: "501" }, [{ path: "limit", message: "must be at most 500" }]],
    [
      "limit not a number",
      { limit: "ten" },
      [{ path: "limit", message: "must be a whole number from 1 to 500" }],
    ],
    ["limit negative", { limit: "-1" }, [{ path: "limit", message: "must be a whole number from 1 to 500" }]],
    [
      "limit fractional",
      { limit: "1.5" },
      [{ path: "limit", message: "must be a whole number from 1 to 500" }],
    ],
    ["empty continue", { continue: "" }, [{ path: "continue", message: "must not be empty" }]],
  ])("%s", (_, input, expected) => {
    expect(issues(ListSandboxesQuery, input)).toEqual(expected);
  });
});

describe("TimeoutRequest", () => {
  it.each<[Record<string, number>]>([
    [{ timeout: 1 }],
    [{ timeout: 604_800 }],
    [{ idleTimeout: 0 }],
    [{ timeout: 60, idleTimeout: 30 }],
  ])("accepts %j", (input) => {
    expect(parseWith(TimeoutRequest, input)).toEqual({ ok: true, value: input });
  });

  it.each<[unknown, ApiIssue[]]>([
    [
      {},
      [
        {
          path: "",
          message: 'give "timeout" (lifetime from now, seconds) and/or "idleTimeout" (seconds, 0 = none)',
        },
      ],
    ],
    [{ timeout: 0 }, [{ path: "timeout", message: "must be at least 1 seconds" }]],
    [{ idleTimeout: -1 }, [{ path: "idleTimeout", message: "must be at least 0 seconds" }]],
    [{ timeout: 604_801 }, [{ path: "timeout", message: "must be at most 604800 seconds" }]],
    [{ timeout: 2.5 }, [{ path: "timeout", message: "must be a whole number of seconds" }]],
    [
      { idleTimeout: "60" },
      [{ path: "idleTimeout", message: "must be a number of seconds (0 = no idle timeout, at most 7 days)" }],
    ],
    [{ timeout: 60, ttl: 1 }, [{ path: "ttl", message: "unknown field" }]],
  ])("%j is refused", (input, expected) => {
    expect(issues(TimeoutRequest, input)).toEqual(expected);
  });
});

describe("HistoryQuery", () => {
  it("is the history store's query, with times normalised to whole UTC seconds", () => {
    const parsed = parseWith(HistoryQuery, {
      namespace: "team-a",
      pool: "python",
      team: "ml",
      user: "ada",
      from: "2026-05-10T14:00:00+02:00",
      to: "2026-05-10T12:30:00.250Z",
      limit: "1000",
      after: "cursor",
    });
    const expected: StoreHistoryQuery = {
      namespace: "team-a",
      pool: "python",
      team: "ml",
      user: "ada",
      from: "2026-05-10T12:00:00Z",
      to: "2026-05-10T12:30:01Z",
      limit: 1000,
      after: "cursor",
    };
    expect(parsed).toEqual({ ok: true, value: expected });
    if (parsed.ok) {
      const typed: StoreHistoryQuery = parsed.value;
      expect(typed.limit).toBe(1000);
    }
  });

  it("defaults limit to 100", () => {
    expect(parseWith(HistoryQuery, {})).toEqual({ ok: true, value: { limit: 100 } });
  });

  it.each<[string, Record<string, string>, string]>([
    ["from without a zone", { from: "2026-05-10T12:00:00" }, "from"],
    ["to as a date only", { to: "2026-05-10" }, "to"],
    ["from on the 30th of February", { from: "2026-02-30T00:00:00Z" }, "from"],
    ["to at hour 24", { to: "2026-05-10T24:00:00Z" }, "to"],
    ["from as epoch seconds", { from: "1778414400" }, "from"],
    ["limit 1001", { limit: "1001" }, "limit"],
    ["namespace with uppercase", { namespace: "Team" }, "namespace"],
    ["pool as namespace/name", { pool: "team-a/python" }, "pool"],
    ["team with a space", { team: "m l" }, "team"],
    ["empty user", { user: "" }, "user"],
    ["empty after", { after: "" }, "after"],
  ])("%s is refused at its field", (_, input, path) => {
    expect(issues(HistoryQuery, input).map((i) => i.path)).toEqual([path]);
  });

  it("accepts the 29th of February in a leap year", () => {
    expect(parseWith(HistoryQuery, { from: "2028-02-29T00:00:00Z" }).ok).toBe(true);
  });

  it("from must be before to", () => {
    const same = { from: "2026-05-10T12:00:00Z", to: "2026-05-10T12:00:00Z" };
    expect(issues(HistoryQuery, same)).toEqual([{ path: "", message: '"from" must be before "to"' }]);
    expect(parseWith(HistoryQuery, { ...same, to: "2026-05-10T12:00:01Z" }).ok).toBe(true);
  });
});

describe("waitSeconds", () => {
  const pool = (defaultStartupTimeout?: string) =>
    ({ spec: { replicas: 1, ...(defaultStartupTimeout ? { defaultStartupTimeout } : {}) } }) as Parameters<
      typeof waitSeconds
    >[0];
  it("prefers startupTimeout, then the pool default, then two minutes", () => {
    expect(waitSeconds(pool("30s"), { startupTimeout: 9 })).toBe(9);
    expect(waitSeconds(pool("1m30s"), {})).toBe(90);
    expect(waitSeconds(pool(), {})).toBe(120);
  });

  it("waits at most 5 minutes without a waitTimeout, however long the startup timeout", () => {
    expect(waitSeconds(pool(), { startupTimeout: 3600 })).toBe(300);
    expect(waitSeconds(pool("1h"), {})).toBe(300);
    expect(waitSeconds(pool("1h"), { startupTimeout: 301 })).toBe(300);
    expect(waitSeconds(pool("1h"), { startupTimeout: 299 })).toBe(299);
    // An explicit waitTimeout is the caller's (validated to at most 300 s by the schema).
    expect(waitSeconds(pool("1h"), { waitTimeout: 45, startupTimeout: 3600 })).toBe(45);
  });
});

describe("activity reports", () => {
  it("records a report only when it moves last-active on by the throttle", () => {
    expect(shouldRecordActivity(undefined, "2026-11-21T12:00:00Z")).toBe(true);
    expect(shouldRecordActivity("2026-11-21T12:00:00Z", "2026-11-21T12:00:29Z")).toBe(false);
    expect(shouldRecordActivity("2026-11-21T12:00:00Z", "2026-11-21T12:00:30Z")).toBe(true);
    expect(shouldRecordActivity("2026-11-21T12:00:00Z", "2026-11-21T11:00:00Z")).toBe(false);
    expect(shouldRecordActivity(undefined, "yesterday")).toBe(false);
  });

  it("validates the batch with field paths", () => {
    const bad = parseWith(ActivityRequest, {
      sandboxes: [
        { id: "sbx-1", lastActive: "noon" },
        { id: "has space", lastActive: "2026-11-21T12:00:00Z" },
      ],
    });
    expect(bad.ok ? [] : bad.issues.map((i) => i.path)).toEqual([
      "sandboxes[0].lastActive",
      "sandboxes[1].id",
    ]);
    expect(parseWith(ActivityRequest, { sandboxes: [] }).ok).toBe(false);
  });
});

describe("demandWorthRecording", () => {
  const now = new Date("2026-11-21T12:00:10Z");
  it("stamps when absent, unreadable or older than the throttle", () => {
    expect(demandWorthRecording([undefined], now)).toBe(true);
    expect(demandWorthRecording(["garbage"], now)).toBe(true);
    expect(demandWorthRecording(["2026-11-21T12:00:05Z"], now)).toBe(true);
    expect(demandWorthRecording(["2026-11-21T12:00:06Z"], now)).toBe(false);
    // The latest of the stored stamp and this process's own last write counts.
    expect(demandWorthRecording(["2026-11-21T12:00:00Z", new Date("2026-11-21T12:00:07Z")], now)).toBe(false);
  });
});
