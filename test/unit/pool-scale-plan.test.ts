import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { PoolScaleDownPolicy } from "../../lib/crd/autoscaling.ts";
import { ENV_LABEL, SCALE_DOWN_PROTECTED_ANNOTATION, SCALING_GROUP_LABEL } from "../../lib/crd/keys.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { planScale, scaleDownPolicyFor } from "../../lib/pool/scale-plan.ts";

const NOW = new Date("2026-03-01T12:00:00Z");
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000).toISOString();
const POLICY: PoolScaleDownPolicy = {
  idleTimeoutSeconds: 300,
  stabilizationSeconds: 60,
  protectionWindowSeconds: 10,
};
const IDLE_SINCE = "test.example/idle-since";

interface PodOpts {
  /** phase: the sandbox-phase label; null leaves the label off. */
  phase?: string | null;
  terminating?: boolean;
  /** idleFor: seconds the Pod has been idle (known to the caller's idleSince). */
  idleFor?: number;
  /** markedFor: seconds since the scale-down mark; a string is written verbatim. */
  markedFor?: number | string;
}

function pod(name: string, o: PodOpts = {}): V1Pod {
  const annotations: Record<string, string> = {};
  if (o.idleFor !== undefined) annotations[IDLE_SINCE] = ago(o.idleFor);
  if (o.markedFor !== undefined) {
    annotations[SCALE_DOWN_PROTECTED_ANNOTATION] =
      typeof o.markedFor === "string" ? o.markedFor : ago(o.markedFor);
  }
  return {
    metadata: {
      name,
      labels: o.phase === null ? {} : { "agentbox.navix.sh/sandbox-phase": o.phase ?? "idle" },
      annotations,
      // Pods come from the API server as JSON: timestamps are strings at run time.
      ...(o.terminating ? { deletionTimestamp: ago(1) as unknown as Date } : {}),
    },
  };
}

const idleSince = (p: V1Pod) => {
  const at = p.metadata?.annotations?.[IDLE_SINCE];
  return at ? new Date(at) : undefined;
};

function pool(replicas: number, labels: Record<string, string> = {}): SandboxPool {
  return {
    metadata: { name: "web", namespace: "ns", uid: "u", labels },
    spec: { replicas, podCreationImagePolicy: "IdleImage" },
  };
}

const plan = (replicas: number, pods: V1Pod[], policy = POLICY) =>
  planScale(pool(replicas), pods, NOW, policy, idleSince);

describe("planScale: scale up", () => {
  it.each([
    ["empty pool", 3, [], [0, 1, 2]],
    ["fills the lowest free slots", 4, [pod("web-1"), pod("web-3")], [0, 2]],
    [
      "skips slots held by terminating Pods, surging past replicas",
      3,
      [pod("web-0", { terminating: true })],
      [1, 2, 3],
    ],
    [
      "terminating Pods do not count, but block their slot",
      2,
      [pod("web-0", { terminating: true }), pod("web-1", { terminating: true })],
      [2, 3],
    ],
    ["adopted Pods count toward replicas", 3, [pod("web-x7k2p"), pod("web-a9c3d")], [0]],
    ["Pods above replicas hold no slot below it", 3, [pod("web-7"), pod("web-8")], [0]],
    ["running Pods count like any other", 2, [pod("web-0", { phase: "running" })], [1]],
  ])("%s", (_what, replicas, pods, create) => {
    expect(plan(replicas, pods).create).toEqual(create);
  });

  it.each([
    ["count = replicas", 2, [pod("web-0"), pod("web-1")]],
    ["count > replicas", 1, [pod("web-0"), pod("web-1")]],
    ["count > replicas with free low slots", 1, [pod("web-5"), pod("web-x")]],
    ["zero replicas", 0, []],
  ])("never creates when %s", (_what, replicas, pods) => {
    expect(plan(replicas, pods).create).toEqual([]);
  });

  it("surges at most one slot past replicas per terminating Pod, and none without one", () => {
    const pods = [pod("web-0", { terminating: true }), pod("web-1", { terminating: true })];
    expect(plan(3, pods).create).toEqual([2, 3, 4]);
    expect(plan(3, [pod("web-0"), pod("web-1", { terminating: true })]).create).toEqual([2, 3]);
    expect(plan(2, [pod("web-0")]).create).toEqual([1]);
  });
});

describe("planScale: scale down", () => {
  it("marks only idle Pods idle long enough, longest idle first, as many as the excess", () => {
    const pods = [
      pod("web-0", { idleFor: 400 }),
      pod("web-1", { idleFor: 900 }),
      pod("web-2", { idleFor: 100 }), // not idle long enough
      pod("web-3", { phase: "running" }),
      pod("web-4", { idleFor: 600 }),
      pod("web-5", { idleFor: 1000, terminating: true }),
    ];
    expect(plan(3, pods)).toEqual({
      create: [],
      protect: ["web-1", "web-4"],
      unprotect: [],
      delete: [],
      replace: [],
    });
  });

  it("breaks ties on idle time by name, and skips Pods whose idle time is unknown", () => {
    const pods = [pod("web-b", { idleFor: 500 }), pod("web-a", { idleFor: 500 }), pod("web-c")];
    expect(plan(2, pods).protect).toEqual(["web-a"]);
  });

  it.each(["running", "starting", "stopping", "failed", null])(
    "never marks or deletes a %s Pod to shrink",
    (phase) => {
      const pods = [
        pod("web-0", { phase, idleFor: 1000, markedFor: 100 }),
        pod("web-1", { phase: "running" }),
      ];
      expect(plan(0, pods)).toEqual({ create: [], protect: [], unprotect: [], delete: [], replace: [] });
    },
  );

  it("deletes a marked Pod only once its protection window is over", () => {
    expect(plan(1, [pod("web-0"), pod("web-1", { idleFor: 999, markedFor: 5 })])).toEqual({
      create: [],
      protect: [],
      unprotect: [],
      delete: [],
      replace: [],
    });
    expect(plan(1, [pod("web-0"), pod("web-1", { idleFor: 999, markedFor: 10 })]).delete).toEqual(["web-1"]);
  });

  it("counts existing marks toward the excess and marks only the rest", () => {
    const pods = [
      pod("web-0", { idleFor: 900, markedFor: 3 }),
      pod("web-1", { idleFor: 800 }),
      pod("web-2", { idleFor: 700 }),
      pod("web-3", { idleFor: 600 }),
    ];
    expect(plan(2, pods)).toEqual({ create: [], protect: ["web-1"], unprotect: [], delete: [], replace: [] });
  });

  it("unmarks the newest marks beyond the excess", () => {
    const pods = [
      pod("web-0", { idleFor: 900, markedFor: 30 }),
      pod("web-1", { idleFor: 900, markedFor: 5 }),
      pod("web-2", { idleFor: 900 }),
    ];
    expect(plan(2, pods)).toEqual({
      create: [],
      protect: [],
      unprotect: ["web-1"],
      delete: ["web-0"],
      replace: [],
    });
  });

  it("leaves stabilizationSeconds to the autoscaler: marks right after a recent scale-down", () => {
    const pods = [pod("web-0", { idleFor: 900 }), pod("web-1"), pod("web-2")];
    const withRecentScaleDown = { ...POLICY, stabilizationSeconds: 3600 };
    expect(plan(2, pods, withRecentScaleDown).protect).toEqual(["web-0"]);
  });

  it("ignores a marked Pod that was claimed: it is not idle, so neither kept nor deleted", () => {
    const pods = [pod("web-0", { phase: "starting", markedFor: 60 }), pod("web-1", { idleFor: 900 })];
    expect(plan(1, pods)).toEqual({ create: [], protect: ["web-1"], unprotect: [], delete: [], replace: [] });
  });

  it("unmarks every idle Pod when replicas went back up", () => {
    const pods = [
      pod("web-0", { idleFor: 900, markedFor: 5 }),
      pod("web-1", { idleFor: 900, markedFor: 50 }),
      pod("web-2", { phase: "running", markedFor: 50 }),
    ];
    expect(plan(3, pods)).toEqual({
      create: [],
      protect: [],
      unprotect: ["web-0", "web-1"],
      delete: [],
      replace: [],
    });
    expect(plan(5, pods)).toEqual({
      create: [3, 4],
      protect: [],
      unprotect: ["web-0", "web-1"],
      delete: [],
      replace: [],
    });
  });

  it("re-marks a Pod whose mark cannot be read, or removes the garbled mark", () => {
    const pods = [pod("web-0", { idleFor: 900, markedFor: "yesterday" }), pod("web-1", { idleFor: 100 })];
    expect(plan(1, pods)).toEqual({ create: [], protect: ["web-0"], unprotect: [], delete: [], replace: [] });
    const other = [
      pod("web-0", { idleFor: 900 }),
      pod("web-1", { idleFor: 100, markedFor: "?" }),
      pod("web-2"),
    ];
    expect(plan(2, other)).toEqual({
      create: [],
      protect: ["web-0"],
      unprotect: ["web-1"],
      delete: [],
      replace: [],
    });
  });

  it("respects idleTimeoutSeconds and protectionWindowSeconds from the policy", () => {
    const pods = [pod("web-0", { idleFor: 20 }), pod("web-1", { idleFor: 40, markedFor: 1 })];
    const quick = { idleTimeoutSeconds: 10, stabilizationSeconds: 0, protectionWindowSeconds: 0 };
    expect(plan(0, pods, quick)).toEqual({
      create: [],
      protect: ["web-0"],
      unprotect: [],
      delete: ["web-1"],
      replace: [],
    });
  });

  it("is idempotent: applying the plan's marks leads to deletes, not more marks", () => {
    const first = plan(1, [pod("web-0", { idleFor: 900 }), pod("web-1", { idleFor: 800 })]);
    expect(first.protect).toEqual(["web-0"]);
    const later = plan(1, [pod("web-0", { idleFor: 915, markedFor: 15 }), pod("web-1", { idleFor: 815 })]);
    expect(later).toEqual({ create: [], protect: [], unprotect: [], delete: ["web-0"], replace: [] });
  });
});

describe("scaleDownPolicyFor", () => {
  const env = (groups: unknown[]): SandboxEnv =>
    ({
      metadata: { name: "e", namespace: "ns" },
      spec: { templateRef: { name: "t" }, mode: "WarmPool", autoscaling: { groups } },
    }) as SandboxEnv;
  const member = pool(1, { [ENV_LABEL]: "e", [SCALING_GROUP_LABEL]: "g" });
  const defaults = { idleTimeoutSeconds: 300, stabilizationSeconds: 60, protectionWindowSeconds: 10 };
  // Pools no group covers are scaled by hand: only the protection window delays a scale-down.
  const manual = { idleTimeoutSeconds: 0, stabilizationSeconds: 0, protectionWindowSeconds: 10 };
  const custom = { idleTimeoutSeconds: 30, stabilizationSeconds: 5, protectionWindowSeconds: 2 };

  it.each([
    ["a standalone pool", pool(1), env([{ name: "g", scaleDownPolicy: custom }]), manual],
    ["a member without its Env", member, undefined, manual],
    ["a member whose Env lacks the group", member, env([{ name: "other", scaleDownPolicy: custom }]), manual],
    [
      "a member of another Env",
      pool(1, { [ENV_LABEL]: "f", [SCALING_GROUP_LABEL]: "g" }),
      env([{ name: "g", scaleDownPolicy: custom }]),
      manual,
    ],
    [
      "a member excluded from autoscaling",
      pool(1, { [ENV_LABEL]: "e" }),
      env([{ name: "g", scaleDownPolicy: custom }]),
      manual,
    ],
    ["a member of the group", member, env([{ name: "g", scaleDownPolicy: custom }]), custom],
    [
      "a member of a disabled group",
      member,
      env([{ name: "g", enabled: false, scaleDownPolicy: custom }]),
      custom,
    ],
    [
      "a group policy with fields left out",
      member,
      env([{ name: "g", scaleDownPolicy: { idleTimeoutSeconds: 0 } }]),
      { ...defaults, idleTimeoutSeconds: 0 },
    ],
    ["a group without a policy", member, env([{ name: "g" }]), defaults],
  ])("%s", (_what, p, e, expected) => {
    expect(scaleDownPolicyFor(p, e)).toEqual(expected);
  });
});
