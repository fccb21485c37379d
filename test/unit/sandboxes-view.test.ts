import type { V1ContainerStatus, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import {
  isMetadataFilterError,
  matchesMetadata,
  parseMetadataFilter,
  type SandboxView,
  sandboxView,
} from "../../lib/claims/sandbox-view.ts";
import {
  CLAIMED_AT_ANNOTATION,
  IDLE_TIMEOUT_ANNOTATION,
  INPLACE_UPDATE_STATE_ANNOTATION,
  SANDBOX_ID_ANNOTATION,
  SANDBOX_ID_LABEL,
  SANDBOX_METADATA_ANNOTATION,
  SANDBOX_PHASE_LABEL,
  SANDBOX_POOL_LABEL,
  SANDBOX_STATUS_DETAIL_ANNOTATION,
  type SandboxPhase,
  STARTED_AT_ANNOTATION,
  STARTUP_TIMEOUT_ANNOTATION,
  TEAM_LABEL,
  USER_LABEL,
} from "../../lib/crd/keys.ts";

const NOW = new Date("2026-05-10T12:00:00Z");
const CLAIMED = "2026-05-10T11:58:00Z";
const STARTED = "2026-05-10T11:58:05Z";
const EARLIER = "2026-05-10T11:59:00Z";

function pod(
  phase: SandboxPhase | undefined,
  annotations: Record<string, string> = {},
  statuses?: Partial<V1ContainerStatus>[],
): V1Pod {
  return {
    metadata: {
      name: "python-3",
      namespace: "team-a",
      labels: {
        [SANDBOX_POOL_LABEL]: "python",
        ...(phase ? { [SANDBOX_PHASE_LABEL]: phase } : {}),
        ...(phase && phase !== "idle"
          ? { [SANDBOX_ID_LABEL]: "sbx-1", [TEAM_LABEL]: "ml", [USER_LABEL]: "ada" }
          : {}),
      },
      annotations: {
        ...(phase && phase !== "idle"
          ? {
              [SANDBOX_ID_ANNOTATION]: "sbx-1",
              [CLAIMED_AT_ANNOTATION]: CLAIMED,
              [INPLACE_UPDATE_STATE_ANNOTATION]: JSON.stringify({
                phase: "starting",
                targetImages: { main: "app:2" },
              }),
            }
          : {}),
        ...annotations,
      },
    },
    spec: {
      containers: [
        { name: "main", image: "app:2" },
        { name: "proxy", image: "proxy:1" },
      ],
    },
    status: {
      phase: "Running",
      podIP: "10.0.0.7",
      containerStatuses: statuses as V1ContainerStatus[] | undefined,
    },
  };
}

const base = {
  sandboxId: "sbx-1",
  namespace: "team-a",
  pool: "python",
  pod: "python-3",
  team: "ml",
  user: "ada",
  claimedAt: CLAIMED,
  images: { main: "app:2", proxy: "proxy:1" },
  metadata: {},
  podIP: "10.0.0.7",
};
const detail = (reason: string, message: string, lastUpdatedTime: string) => ({
  reason,
  message,
  lastUpdatedTime,
});
const pullBackOff = [
  { name: "main", state: { waiting: { reason: "ImagePullBackOff", message: "Back-off pulling app:2" } } },
];

describe("sandboxView: not sandboxes", () => {
  it.each<[string, V1Pod]>([
    ["idle pod", pod("idle")],
    ["pod without a sandbox phase", pod(undefined)],
    [
      "claimed phase but no sandbox id",
      (() => {
        const p = pod("running");
        delete p.metadata?.labels?.[SANDBOX_ID_LABEL];
        delete p.metadata?.annotations?.[SANDBOX_ID_ANNOTATION];
        return p;
      })(),
    ],
  ])("%s → undefined", (_, p) => {
    expect(sandboxView(p, NOW)).toBeUndefined();
  });

  it("an unknown phase label value is not a sandbox", () => {
    const p = pod("running");
    (p.metadata?.labels ?? {})[SANDBOX_PHASE_LABEL] = "paused";
    expect(sandboxView(p, NOW)).toBeUndefined();
  });
});

describe("sandboxView: each phase", () => {
  it("starting, nothing wrong yet: Pulling from the live pod", () => {
    expect(sandboxView(pod("starting"), NOW)).toEqual({
      ...base,
      phase: "starting",
      detail: detail("Pulling", "Pulling image: app:2", "2026-05-10T12:00:00Z"),
    });
  });

  it("starting with a stored diagnosis that still holds: the stored one (first seen time)", () => {
    const stored = detail("ImagePullBackOff", "Back-off pulling app:2", EARLIER);
    const view = sandboxView(
      pod("starting", { [SANDBOX_STATUS_DETAIL_ANNOTATION]: JSON.stringify(stored) }, pullBackOff),
      NOW,
    );
    expect(view?.detail).toEqual(stored);
  });

  it("starting with a stale stored diagnosis: the live one", () => {
    const stored = detail("Pulling", "Pulling image: app:2", EARLIER);
    const view = sandboxView(
      pod("starting", { [SANDBOX_STATUS_DETAIL_ANNOTATION]: JSON.stringify(stored) }, pullBackOff),
      NOW,
    );
    expect(view?.detail).toEqual(
      detail("ImagePullBackOff", "Back-off pulling app:2", "2026-05-10T12:00:00Z"),
    );
  });

  it("running: times, timeouts, metadata, no detail (a leftover annotation is stale)", () => {
    const view = sandboxView(
      pod("running", {
        [STARTED_AT_ANNOTATION]: STARTED,
        [IDLE_TIMEOUT_ANNOTATION]: "600",
        [STARTUP_TIMEOUT_ANNOTATION]: "120",
        [SANDBOX_METADATA_ANNOTATION]: JSON.stringify({ run: "42", n: 7, task: "swe" }),
        [SANDBOX_STATUS_DETAIL_ANNOTATION]: JSON.stringify(
          detail("Pulling", "Pulling image: app:2", EARLIER),
        ),
      }),
      NOW,
    );
    expect(view).toEqual({
      ...base,
      phase: "running",
      startedAt: STARTED,
      idleTimeoutSeconds: 600,
      startupTimeoutSeconds: 120,
      metadata: { run: "42", task: "swe" },
    });
  });

  it("stopping: still a sandbox, without detail", () => {
    expect(sandboxView(pod("stopping", { [STARTED_AT_ANNOTATION]: STARTED }), NOW)).toEqual({
      ...base,
      phase: "stopping",
      startedAt: STARTED,
    });
  });

  it("failed with the diagnosis written when it failed: that one", () => {
    const stored = detail("OOMKilled", 'container "main" was OOM-killed (exit code 137)', EARLIER);
    const view = sandboxView(
      pod("failed", { [SANDBOX_STATUS_DETAIL_ANNOTATION]: JSON.stringify(stored) }),
      NOW,
    );
    expect(view).toEqual({ ...base, phase: "failed", detail: stored });
  });

  it("failed without a stored diagnosis: the live one", () => {
    const view = sandboxView(
      pod("failed", {}, [{ name: "main", state: { terminated: { reason: "OOMKilled", exitCode: 137 } } }]),
      NOW,
    );
    expect(view?.detail).toEqual(
      detail("OOMKilled", 'container "main" was OOM-killed (exit code 137)', "2026-05-10T12:00:00Z"),
    );
  });

  it("failed with nothing to show: no detail", () => {
    expect(sandboxView(pod("failed"), NOW)).not.toHaveProperty("detail");
  });
});

describe("sandboxView: tolerant reads", () => {
  it.each([
    ["not JSON", "{run"],
    ["an array", '["a"]'],
    ["null", "null"],
    ["a string", '"x"'],
  ])("metadata that is %s reads as {}", (_, raw) => {
    expect(sandboxView(pod("running", { [SANDBOX_METADATA_ANNOTATION]: raw }), NOW)?.metadata).toEqual({});
  });

  it.each(["0", "-5", "ten", ""])("timeout annotation %j is left out", (raw) => {
    const view = sandboxView(
      pod("running", { [IDLE_TIMEOUT_ANNOTATION]: raw, [STARTUP_TIMEOUT_ANNOTATION]: raw }),
      NOW,
    );
    expect(view).not.toHaveProperty("idleTimeoutSeconds");
    expect(view).not.toHaveProperty("startupTimeoutSeconds");
  });

  it("a garbled status detail is ignored (the live diagnosis is shown)", () => {
    const view = sandboxView(pod("starting", { [SANDBOX_STATUS_DETAIL_ANNOTATION]: '{"reason":1}' }), NOW);
    expect(view?.detail?.reason).toBe("Pulling");
  });

  it("the sandbox id falls back to the label; team, user and pod IP are optional", () => {
    const p = pod("running");
    delete p.metadata?.annotations?.[SANDBOX_ID_ANNOTATION];
    delete p.metadata?.labels?.[TEAM_LABEL];
    delete p.metadata?.labels?.[USER_LABEL];
    delete p.status?.podIP;
    const view = sandboxView(p, NOW);
    expect(view?.sandboxId).toBe("sbx-1");
    expect(view).not.toHaveProperty("team");
    expect(view).not.toHaveProperty("user");
    expect(view).not.toHaveProperty("podIP");
  });
});

describe("matchesMetadata", () => {
  const view = { metadata: { run: "42", task: "swe", empty: "" } } as unknown as SandboxView;
  it.each<[Record<string, string>, boolean]>([
    [{}, true],
    [{ run: "42" }, true],
    [{ run: "42", task: "swe" }, true],
    [{ empty: "" }, true],
    [{ run: "43" }, false],
    [{ run: "42", task: "other" }, false],
    [{ missing: "" }, false],
    [{ toString: "x" }, false],
  ])("%j → %s", (filter, ok) => {
    expect(matchesMetadata(view, filter)).toBe(ok);
  });
});

describe("parseMetadataFilter", () => {
  it.each<[string, Record<string, string>]>([
    ["", {}],
    ["  ", {}],
    ["run=42", { run: "42" }],
    ["run=42,task=swe", { run: "42", task: "swe" }],
    [" run = 42 , task=swe ", { run: "42", task: "swe" }],
    ["q=a=b", { q: "a=b" }],
    ["empty=", { empty: "" }],
    ["error=x", { error: "x" }],
  ])("%j → %j", (text, filter) => {
    const result = parseMetadataFilter(text);
    expect(isMetadataFilterError(result)).toBe(false);
    expect(result).toEqual(filter);
  });

  it.each([
    ["run", 'metadata filter entry "run" is not key=value'],
    ["run=1,", 'metadata filter entry "" is not key=value'],
    ["=1", 'metadata filter entry "=1" is not key=value'],
    ["a=1,a=2", 'metadata filter key "a" is repeated'],
  ])("%j is an error", (text, error) => {
    const result = parseMetadataFilter(text);
    expect(isMetadataFilterError(result)).toBe(true);
    expect(result).toEqual({ error });
  });
});
