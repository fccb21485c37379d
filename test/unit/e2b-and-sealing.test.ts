import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { type SandboxView, sandboxView, whyNotRunning } from "../../lib/claims/sandbox-view.ts";
import { envdAccessToken, importSealKeys, seal, unseal } from "../../lib/claims/sealing.ts";
import { parseWith } from "../../lib/crd/parse-with.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { e2bListed, e2bSandbox, isE2bVisible } from "../../lib/e2b/answers.ts";
import { createWaitSeconds, keepListed, nativeCreate } from "../../lib/e2b/requests.ts";
import {
  ConnectSandbox,
  ConnectSandboxV2,
  ListSandboxesV2Query,
  metadataQuery,
  NewSandbox,
  NewSandboxV2,
  PauseSandbox,
  ResumeSandbox,
} from "../../lib/e2b/schemas.ts";

// E2B's request shapes and views, and the sealing of per-claim secrets, on plain data.

describe("sealing", () => {
  it("round-trips for the same sandbox only, and never shows the plain text", async () => {
    const keys = await importSealKeys("k".repeat(32));
    const sealed = await seal(keys, "sbx-1", '{"TOKEN":"hunter2"}');
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain("hunter2");
    expect(await unseal(keys, "sbx-1", sealed)).toBe('{"TOKEN":"hunter2"}');
    expect(await unseal(keys, "sbx-2", sealed)).toBeUndefined();
    expect(await unseal(await importSealKeys("j".repeat(32)), "sbx-1", sealed)).toBeUndefined();
    const flipped = `${sealed.slice(0, -2)}${sealed.at(-2) === "A" ? "B" : "A"}${sealed.at(-1)}`;
    expect(await unseal(keys, "sbx-1", flipped)).toBeUndefined();
    expect(await unseal(keys, "sbx-1", "v1.!!")).toBeUndefined();
    expect(await unseal(keys, "sbx-1", "plain")).toBeUndefined();
  });

  it("derives a stable envd token per sandbox and key, and refuses a short secret", async () => {
    const keys = await importSealKeys("k".repeat(32));
    const a = await envdAccessToken(keys, "sbx-1");
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await envdAccessToken(keys, "sbx-1")).toBe(a);
    expect(await envdAccessToken(keys, "sbx-2")).not.toBe(a);
    expect(await envdAccessToken(await importSealKeys("j".repeat(32)), "sbx-1")).not.toBe(a);
    await expect(importSealKeys("short")).rejects.toThrow(/32 characters/);
  });
});

describe("E2B request shapes", () => {
  it("defaults the lifetime as E2B does (v2 300 s, v1 15 s) and ignores unknown fields", () => {
    expect(parseWith(NewSandboxV2, { templateID: "base", newField: 1 })).toMatchObject({
      ok: true,
      value: { templateID: "base", timeout: 300 },
    });
    expect(parseWith(NewSandbox, { templateID: "base" })).toMatchObject({ ok: true, value: { timeout: 15 } });
    // A v2 connect without a timeout: 300 s for a running sandbox, the time it had left for a paused one.
    expect(parseWith(ConnectSandboxV2, undefined)).toEqual({ ok: true, value: {} });
  });

  it.each<[unknown, string]>([
    [{}, "templateID"],
    [{ templateID: "base", timeout: 0 }, "timeout"],
    [{ templateID: "base", envVars: { "1X": "v" } }, "envVars"],
    [{ templateID: "base", autoPause: "yes" }, "autoPause"],
    [{ templateID: "base", autoPause: true, autoPauseMemory: true }, "autoPauseMemory"],
    [{ templateID: "base", volumeMounts: [{ name: "v", path: "/v" }] }, "volumeMounts"],
    [{ templateID: "base", allow_internet_access: "no" }, "allow_internet_access"],
    [{ templateID: "base", network: { allowOut: ["example.com"] } }, "network.allowOut"],
    [{ templateID: "base", autoResume: { enabled: true } }, "autoResume"],
    [{ templateID: "base", autoPause: false, autoResume: { enabled: true } }, "autoResume"],
    [{ templateID: "base", autoPause: true, autoResume: { enabled: true } }, "autoResume"],
    [[1], ""],
  ])("refuses %j naming %s", (input, field) => {
    const parsed = parseWith(NewSandboxV2, input);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.issues[0]?.path.startsWith(field)).toBe(true);
  });

  it("takes what the SDK sends for features left off (null, false, empty)", () => {
    const sent = {
      templateID: "base",
      autoPause: false,
      mcp: null,
      network: {},
      volumeMounts: [],
      autoResume: null,
    };
    expect(parseWith(NewSandboxV2, sent)).toMatchObject({
      ok: true,
      value: { autoPause: false, autoResume: false },
    });
  });

  it("keeps autoPause for the create (the SDK's lifecycle: onTimeout pause); autoResume is refused (files-only snapshots)", () => {
    expect(parseWith(NewSandboxV2, { templateID: "base" })).toMatchObject({
      ok: true,
      value: { autoPause: false },
    });
    const sdk = { templateID: "base", autoPause: true, autoResume: { enabled: false } };
    expect(parseWith(NewSandboxV2, sdk)).toMatchObject({
      ok: true,
      value: { autoPause: true, autoResume: false },
    });
    expect(parseWith(NewSandboxV2, { ...sdk, autoPauseMemory: false }).ok).toBe(true);
  });

  it("refuses memory snapshots by name (pause, connect) and takes what the SDK sends without them", () => {
    for (const schema of [PauseSandbox, ConnectSandboxV2]) {
      expect(parseWith(schema, { memory: false }).ok).toBe(true);
      expect(parseWith(schema, {}).ok).toBe(true);
      const refused = parseWith(schema, { memory: true });
      expect(refused.ok).toBe(false);
      if (!refused.ok) {
        expect(refused.issues[0]?.path).toBe("memory");
        expect(refused.issues[0]?.message).toMatch(/files/);
      }
    }
    expect(parseWith(ConnectSandbox, { timeout: 60, memory: true }).ok).toBe(false);
    expect(parseWith(PauseSandbox, undefined)).toEqual({ ok: true, value: {} });
  });

  it("reads a resume's timeout and E2B's deprecated autoPause", () => {
    expect(parseWith(ResumeSandbox, undefined)).toEqual({ ok: true, value: {} });
    expect(parseWith(ResumeSandbox, { timeout: 60, autoPause: true })).toMatchObject({
      ok: true,
      value: { timeout: 60 },
    });
    expect(parseWith(ResumeSandbox, { timeout: 0 }).ok).toBe(false);
  });

  it("reads list queries: states, limits and the double-encoded metadata filter", () => {
    expect(parseWith(ListSandboxesV2Query, { state: "running,paused", limit: "5" })).toMatchObject({
      ok: true,
      value: { state: ["running", "paused"], limit: 5 },
    });
    expect(parseWith(ListSandboxesV2Query, { state: "stopped" }).ok).toBe(false);
    expect(parseWith(ListSandboxesV2Query, { limit: "101" }).ok).toBe(false);
    const inner = new URLSearchParams({ [encodeURIComponent("a b")]: encodeURIComponent("x&y") }).toString();
    expect(metadataQuery(inner)).toEqual({ "a b": "x&y" });
  });
});

describe("E2B views", () => {
  const pod = {
    metadata: {
      name: "p-0",
      namespace: "ns",
      labels: {
        "agentbox.navix.sh/sandbox-pool": "p",
        "agentbox.navix.sh/sandbox-phase": "running",
        "agentbox.navix.sh/sandbox-id": "sbx-1",
      },
      annotations: {
        "agentbox.navix.sh/sandbox-id": "sbx-1",
        "agentbox.navix.sh/claimed-at": "2026-11-21T11:00:00Z",
        "agentbox.navix.sh/end-at": "2026-11-21T11:05:00Z",
        "agentbox.navix.sh/sandbox-metadata": '{"run":"1"}',
        "e2b.agentbox.dev/template-id": "base",
      },
    },
    spec: {
      containers: [{ name: "main", image: "a:1", resources: { limits: { cpu: "1500m", memory: "2Gi" } } }],
    },
    status: { phase: "Running" },
  } as V1Pod;
  const view = sandboxView(pod, new Date("2026-11-21T11:01:00Z"));

  it("shows a running sandbox as E2B's ListedSandbox, resources rounded up", () => {
    expect(view && isE2bVisible(view)).toBe(true);
    if (!view) return;
    expect(e2bListed(pod, view, { envdVersion: "0.5.7" })).toEqual({
      templateID: "base",
      sandboxID: "sbx-1",
      clientID: "agentbox",
      startedAt: "2026-11-21T11:00:00Z",
      endAt: "2026-11-21T11:05:00Z",
      cpuCount: 2,
      memoryMB: 2048,
      diskSizeMB: 0,
      metadata: { run: "1" },
      state: "running",
      envdVersion: "0.5.7",
    });
    expect(e2bSandbox(pod, view, { envdVersion: "0.5.7", domain: "sbx.example" }, "tok")).toMatchObject({
      sandboxID: "sbx-1",
      envdAccessToken: "tok",
      domain: "sbx.example",
    });
  });

  it("hides stopping sandboxes, as E2B hides killed ones", () => {
    const stopping = structuredClone(pod);
    if (stopping.metadata?.labels) stopping.metadata.labels["agentbox.navix.sh/sandbox-phase"] = "stopping";
    const v = sandboxView(stopping, new Date());
    expect(v && isE2bVisible(v)).toBe(false);
  });
});

describe("E2B to native requests", () => {
  it("maps templateID to a template, or to a pool when it has a slash; timeout is the lifetime", () => {
    expect(nativeCreate({ templateID: "base", timeout: 300, envVars: { A: "1" }, autoPause: false })).toEqual(
      {
        ok: true,
        value: { template: "base", timeout: 300, waitTimeout: 20, envVars: { A: "1" } },
      },
    );
    expect(nativeCreate({ templateID: "team-a/python", timeout: 15, autoPause: false })).toMatchObject({
      ok: true,
      value: { pool: "team-a/python" },
    });
    expect(nativeCreate({ templateID: "Not A Name", timeout: 15, autoPause: false })).toEqual({
      ok: false,
      message: "templateID: must be the name of a SandboxTemplate (lowercase DNS subdomain)",
    });
  });

  it("an E2B create waits the pool's startup timeout, but never past the SDK's 60 s", () => {
    const pool = (timeout?: string) => ({ spec: { defaultStartupTimeout: timeout } }) as SandboxPool;
    expect(createWaitSeconds(pool("30s"))).toBe(30);
    expect(createWaitSeconds(pool("5m"))).toBe(55);
    expect(createWaitSeconds(pool())).toBe(55);
    // After 20 s waiting for an idle pod (an Env woke from zero), only what is left of the 55 s.
    expect(createWaitSeconds(pool("5m"), 20.4)).toBe(34);
    expect(createWaitSeconds(pool("30s"), 20)).toBe(30);
    expect(createWaitSeconds(pool(), 60)).toBe(1);
  });

  it("keeps listed sandboxes by visibility, template and start time", () => {
    const view = { claimedAt: "2026-11-21T11:00:00Z" } as SandboxView;
    expect(keepListed(view, "base", {}, true)).toBe(true);
    expect(keepListed(view, "base", {}, false)).toBe(false);
    expect(keepListed(view, "base", { template: "other" }, true)).toBe(false);
    expect(keepListed(view, "base", { startedAfter: "2026-11-21T11:00:00.000+00:00" }, true)).toBe(true);
    expect(keepListed(view, "base", { startedAfter: "2026-11-21T12:00:00+01:00" }, true)).toBe(true);
    expect(keepListed(view, "base", { startedAfter: "2026-11-21T11:00:01Z" }, true)).toBe(false);
  });

  it("explains a sandbox that did not come up", () => {
    expect(whyNotRunning(undefined)).toBe("");
    const failed = { failure: { reason: "PostStartHookFailed", message: "500" } } as SandboxView;
    expect(whyNotRunning(failed)).toBe(": PostStartHookFailed: 500");
    const stuck = { detail: { reason: "ImagePullBackOff", message: "", lastUpdatedTime: "" } } as SandboxView;
    expect(whyNotRunning(stuck)).toBe(": ImagePullBackOff");
  });
});
