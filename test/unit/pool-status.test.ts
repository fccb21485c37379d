import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { Condition } from "../../lib/crd/common.ts";
import type { SandboxPool, SandboxPoolStatus } from "../../lib/crd/sandbox-pool.ts";
import { poolOwnerReference } from "../../lib/membership/pod-ownership.ts";
import { computePoolStatus, statusChanged } from "../../lib/pool/pool-status.ts";

const NOW = new Date("2026-03-01T12:00:00.750Z");
const NOW_RFC3339 = "2026-03-01T12:00:00Z";
const EARLIER = "2026-02-01T08:00:00Z";

/** OWNER is the controller reference of pool()'s own Pods (lib/pool/render-pod.ts writes it). */
const OWNER = poolOwnerReference(pool(1));

let serial = 0;
function pod(phase: string | null, o: { ready?: boolean; terminating?: boolean } = {}): V1Pod {
  return {
    metadata: {
      name: `web-${serial++}`,
      labels: {
        "agentbox.navix.sh/sandbox-pool": "web",
        ...(phase === null ? {} : { "agentbox.navix.sh/sandbox-phase": phase }),
      },
      ownerReferences: [OWNER],
      ...(o.terminating ? { deletionTimestamp: "2026-03-01T11:59:00Z" as unknown as Date } : {}),
    },
    status: { conditions: [{ type: "Ready", status: o.ready === false ? "False" : "True" }] },
  };
}
const idle = (n: number, ready = true) => Array.from({ length: n }, () => pod("idle", { ready }));

function pool(replicas: number, status?: SandboxPoolStatus, deleting = false): SandboxPool {
  return {
    metadata: {
      name: "web",
      namespace: "ns",
      uid: "u",
      generation: 7,
      ...(deleting ? { deletionTimestamp: "2026-03-01T11:00:00Z" } : {}),
    },
    spec: { replicas, podCreationImagePolicy: "IdleImage" },
    ...(status ? { status } : {}),
  };
}

const condition = (s: SandboxPoolStatus, type: string) => s.conditions?.find((c) => c.type === type);

describe("computePoolStatus: phase priority", () => {
  it.each([
    ["Terminating wins over everything", pool(3, undefined, true), [pod("failed")], "Terminating"],
    ["Pending: zero replicas and no Pods", pool(0), [], "Pending"],
    ["Pending ignores terminating Pods", pool(0), [pod("idle", { terminating: true })], "Pending"],
    ["ScalingDown: Pods above zero replicas", pool(0), idle(1), "ScalingDown"],
    ["ScalingUp: fewer Pods than replicas", pool(3), [...idle(1), pod("failed")], "ScalingUp"],
    [
      "ScalingUp counts only live Pods",
      pool(2),
      [...idle(1), pod("idle", { terminating: true })],
      "ScalingUp",
    ],
    ["ScalingDown wins over Degraded", pool(1), [...idle(1, false), pod("running")], "ScalingDown"],
    ["Degraded: an idle Pod not ready", pool(2), [...idle(1), ...idle(1, false)], "Degraded"],
    ["Degraded: a failed Pod", pool(2), [...idle(1), pod("failed")], "Degraded"],
    ["Ready: all present and healthy", pool(3), [...idle(1), pod("running"), pod("starting")], "Ready"],
    ["Ready with only running Pods", pool(1), [pod("stopping")], "Ready"],
  ])("%s", (_what, p, pods, phase) => {
    expect(computePoolStatus(p, pods, NOW).phase).toBe(phase);
  });
});

describe("computePoolStatus: counts, selectors, conditions", () => {
  it("counts live Pods per phase; a Pod without a phase label counts as idle", () => {
    const pods = [
      ...idle(2),
      ...idle(1, false),
      pod(null, { ready: false }),
      pod("running"),
      pod("running"),
      pod("starting"),
      pod("stopping"),
      pod("failed"),
      pod("running", { terminating: true }),
      pod("idle", { terminating: true }),
    ];
    const s = computePoolStatus(pool(9), pods, NOW);
    expect(s).toMatchObject({
      phase: "Degraded",
      idleReplicas: 4,
      unavailableIdleReplicas: 2,
      runningReplicas: 2,
      startingReplicas: 1,
      stoppingReplicas: 1,
      failedReplicas: 1,
    });
  });

  it("counts an idle Pod without a Ready condition as unavailable", () => {
    const p: V1Pod = { metadata: { ...pod("idle").metadata, name: "x" } };
    expect(computePoolStatus(pool(1), [p], NOW).unavailableIdleReplicas).toBe(1);
  });

  it("counts only the pool's own Pods: one that merely carries the pool label is no replica", () => {
    const forged = pod("idle");
    forged.metadata = { ...forged.metadata, ownerReferences: [] };
    const other = pod("running");
    other.metadata = { ...other.metadata, ownerReferences: [{ ...OWNER, uid: "another-pool" }] };
    const s = computePoolStatus(pool(1), [...idle(1), forged, other], NOW);
    expect(s).toMatchObject({ phase: "Ready", idleReplicas: 1, runningReplicas: 0 });
  });

  it("publishes the selector, the structured selector and per-phase selectors", () => {
    const s = computePoolStatus(pool(1), idle(1), NOW);
    const base = "agentbox.navix.sh/sandbox-pool=web";
    expect(s.selector).toBe(base);
    expect(s.labelSelector).toEqual({ matchLabels: { "agentbox.navix.sh/sandbox-pool": "web" } });
    expect(s.phaseSelectors).toEqual({
      all: base,
      idle: `${base},agentbox.navix.sh/sandbox-phase=idle`,
      running: `${base},agentbox.navix.sh/sandbox-phase=running`,
      starting: `${base},agentbox.navix.sh/sandbox-phase=starting`,
      stopping: `${base},agentbox.navix.sh/sandbox-phase=stopping`,
      failed: `${base},agentbox.navix.sh/sandbox-phase=failed`,
    });
  });

  it.each([
    [
      "healthy and complete",
      2,
      idle(2),
      ["True", "IdlePodsAvailable"],
      ["False", "ReplicasReady"],
      ["False", "AllPodsHealthy"],
    ],
    [
      "scaling up",
      3,
      idle(1),
      ["True", "IdlePodsAvailable"],
      ["True", "ScalingUp"],
      ["False", "AllPodsHealthy"],
    ],
    [
      "scaling down",
      1,
      [pod("running"), pod("running")],
      ["False", "NoIdlePodsAvailable"],
      ["True", "ScalingDown"],
      ["False", "AllPodsHealthy"],
    ],
    [
      "idle Pods not ready",
      2,
      idle(2, false),
      ["False", "NoIdlePodsAvailable"],
      ["False", "ReplicasReady"],
      ["True", "UnhealthyIdlePods"],
    ],
    [
      "failed Pods",
      2,
      [...idle(1), pod("failed")],
      ["True", "IdlePodsAvailable"],
      ["False", "ReplicasReady"],
      ["True", "FailedPodsPresent"],
    ],
    [
      "both",
      2,
      [...idle(1, false), pod("failed")],
      ["False", "NoIdlePodsAvailable"],
      ["False", "ReplicasReady"],
      ["True", "UnhealthyAndFailedPods"],
    ],
  ])("conditions when %s", (_what, replicas, pods, available, scaling, degraded) => {
    const s = computePoolStatus(pool(replicas), pods, NOW);
    const pick = (type: string) => {
      const c = condition(s, type);
      return [c?.status, c?.reason];
    };
    expect(pick("Available")).toEqual(available);
    expect(pick("Scaling")).toEqual(scaling);
    expect(pick("Degraded")).toEqual(degraded);
    for (const c of s.conditions ?? []) {
      expect(c.observedGeneration).toBe(7);
      expect(c.lastTransitionTime).toBe(NOW_RFC3339);
      expect(c.message).not.toBe("");
    }
  });
});

describe("computePoolStatus: recomputation", () => {
  it("keeps lastTransitionTime when a condition's status did not change, sets now when it did", () => {
    const previous: Condition[] = [
      {
        type: "Available",
        status: "True",
        reason: "IdlePodsAvailable",
        message: "old",
        lastTransitionTime: EARLIER,
      },
      { type: "Scaling", status: "True", reason: "ScalingUp", message: "old", lastTransitionTime: EARLIER },
      {
        type: "Degraded",
        status: "False",
        reason: "AllPodsHealthy",
        message: "old",
        lastTransitionTime: EARLIER,
      },
    ];
    const s = computePoolStatus(pool(2, { conditions: previous }), idle(2), NOW);
    expect(condition(s, "Available")).toMatchObject({ status: "True", lastTransitionTime: EARLIER });
    expect(condition(s, "Scaling")).toMatchObject({ status: "False", lastTransitionTime: NOW_RFC3339 });
    expect(condition(s, "Degraded")).toMatchObject({ status: "False", lastTransitionTime: EARLIER });
  });

  it("is idempotent: recomputing from the written status changes nothing", () => {
    const pods = [...idle(1), ...idle(1, false), pod("running"), pod("failed")];
    const first = computePoolStatus(pool(3), pods, NOW);
    expect(statusChanged(undefined, first)).toBe(true);
    const later = new Date(NOW.getTime() + 3_600_000);
    const second = computePoolStatus(pool(3, first), pods, later);
    expect(second).toEqual(first);
    expect(statusChanged(first, second)).toBe(false);
  });

  it("reports a change when a count changes", () => {
    const first = computePoolStatus(pool(2), idle(2), NOW);
    const second = computePoolStatus(pool(2, first), [...idle(1), pod("running")], NOW);
    expect(statusChanged(first, second)).toBe(true);
  });

  it("keeps the field it does not own (autoscaling) and conditions of other types", () => {
    const foreign: Condition = {
      type: "example.com/Audited",
      status: "True",
      reason: "Checked",
      message: "",
      lastTransitionTime: EARLIER,
    };
    const previous: SandboxPoolStatus = {
      autoscaling: { lastScaleDownTime: EARLIER, observedGeneration: 6 },
      conditions: [foreign],
    };
    const s = computePoolStatus(pool(1, previous), idle(1), NOW);
    expect(s.autoscaling).toEqual(previous.autoscaling);
    expect(s.conditions?.map((c) => c.type)).toEqual([
      "example.com/Audited",
      "Available",
      "Scaling",
      "Degraded",
      "Progressing",
    ]);
    expect(s.conditions?.[0]).toEqual(foreign);
    expect(computePoolStatus(pool(1), idle(1), NOW)).not.toHaveProperty("pendingRequests");
  });

  it("ignores key order and undefined fields when comparing", () => {
    expect(
      statusChanged(
        { phase: "Ready", idleReplicas: 1 },
        { idleReplicas: 1, phase: "Ready", selector: undefined },
      ),
    ).toBe(false);
  });
});
