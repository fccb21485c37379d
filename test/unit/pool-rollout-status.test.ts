import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { POD_REVISION_LABEL } from "../../lib/crd/keys.ts";
import type { SandboxPool, SandboxPoolStatus } from "../../lib/crd/sandbox-pool.ts";
import type { Action } from "../../lib/kube/action.ts";
import { poolOwnerReference } from "../../lib/membership/pod-ownership.ts";
import { computePoolStatus } from "../../lib/pool/pool-status.ts";
import { podRevision } from "../../lib/pool/render-pod.ts";
import { planStatus } from "../../lib/reconcile/status.ts";

// A rollout as the pool's status tells it (ADR 0031): updated and outdated counts, the
// Progressing condition, the surge not read as a scale-down, and the RolloutStarted and
// RolloutCompleted Events, each announced once by a write that tests the stored status.

const NOW = new Date("2026-11-26T12:00:00Z");

function pool(replicas: number, image: string, env: string, status?: SandboxPoolStatus): SandboxPool {
  return {
    metadata: { name: "p", namespace: "ns", uid: "pool-uid", resourceVersion: "3", generation: 2 },
    spec: {
      replicas,
      podCreationImagePolicy: "IdleImage",
      template: { spec: { containers: [{ name: "main", image, env: [{ name: "MODE", value: env }] }] } },
    },
    ...(status ? { status } : {}),
  };
}
const OLD = podRevision(pool(1, "img:1", "v1"));
const NEW = podRevision(pool(1, "img:1", "v2"));

let serial = 0;
const pod = (revision: string, phase = "idle"): V1Pod => ({
  metadata: {
    name: `p-${serial++}`,
    labels: {
      "agentbox.navix.sh/sandbox-pool": "p",
      "agentbox.navix.sh/sandbox-phase": phase,
      [POD_REVISION_LABEL]: revision,
    },
    ownerReferences: [poolOwnerReference(pool(1, "img:1", "v1"))],
  },
  status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
});
const n = (count: number, revision: string, phase = "idle") =>
  Array.from({ length: count }, () => pod(revision, phase));
const condition = (s: SandboxPoolStatus | undefined, type: string) =>
  s?.conditions?.find((c) => c.type === type);

describe("the status of a rollout", () => {
  it("counts updated and outdated pods and says Progressing while any is outdated", () => {
    const s = computePoolStatus(
      pool(4, "img:1", "v2"),
      [...n(3, OLD), ...n(1, OLD, "running"), ...n(2, NEW)],
      NOW,
    );
    expect(s).toMatchObject({ updatedReplicas: 2, outdatedReplicas: 4, updateRevision: NEW });
    expect(condition(s, "Progressing")).toMatchObject({
      status: "True",
      reason: "RolloutInProgress",
      message: `rolling out pod revision ${NEW}: 2 pod(s) updated, 4 outdated (3 idle, replaced once a new pod is ready, up to 1 extra pod(s); 1 with a sandbox, replaced when it is released)`,
    });
  });

  it("is complete once none is outdated, and an image change alone starts no rollout", () => {
    const s = computePoolStatus(pool(2, "img:2", "v2"), n(2, NEW), NOW);
    expect(s).toMatchObject({
      updatedReplicas: 2,
      outdatedReplicas: 0,
      updateRevision: NEW,
      currentRevision: NEW,
    });
    expect(condition(s, "Progressing")).toMatchObject({ status: "False", reason: "RolloutComplete" });
  });

  it("does not read the rollout's surge as a scale-down", () => {
    const s = computePoolStatus(pool(4, "img:1", "v2"), [...n(4, OLD), ...n(1, NEW)], NOW);
    expect(s.phase).toBe("Ready");
    expect(condition(s, "Scaling")).toMatchObject({
      status: "False",
      message: "all 4 replicas are present, and 1 more for the rollout (maxSurge 1)",
    });
    const done = computePoolStatus(pool(4, "img:1", "v2"), n(5, NEW), NOW);
    expect(done.phase).toBe("ScalingDown");
  });

  it("keeps currentRevision while the rollout runs", () => {
    const s = computePoolStatus(pool(2, "img:1", "v2", { currentRevision: OLD }), n(2, OLD), NOW);
    expect(s.currentRevision).toBe(OLD);
  });
});

/** the run's one status write: a merge patch, or the announcing JSON patch with its tests and Events. */
const written = (actions: Action[]) => {
  expect(actions.filter((a) => a.write.op === "status" || a.write.op === "patch-status")).toHaveLength(
    actions.length > 0 ? 1 : 0,
  );
  return actions[0];
};
const reasons = (a: Action | undefined) =>
  [a?.event, ...(a?.events ?? [])].flatMap((e) => (e ? [e.reason] : []));

describe("RolloutStarted and RolloutCompleted", () => {
  const settled: SandboxPoolStatus = { outdatedReplicas: 0, updateRevision: OLD, currentRevision: OLD };

  it("announces a start with the status write, tested against the stored fields", () => {
    const action = written(planStatus(pool(2, "img:1", "v2", settled), n(2, OLD), NOW));
    const patch = action?.write.op === "patch-status" ? action.write.patch : [];
    expect(patch.slice(0, 2)).toEqual([
      { op: "test", path: "/status/outdatedReplicas", value: 0 },
      { op: "test", path: "/status/updateRevision", value: OLD },
    ]);
    // The whole status, as the merge patch would write it: one consistent write.
    const set = Object.fromEntries(
      patch.slice(2).map((op) => [op.path, "value" in op ? op.value : undefined]),
    );
    expect(set).toMatchObject({
      "/status/outdatedReplicas": 2,
      "/status/updatedReplicas": 0,
      "/status/updateRevision": NEW,
      "/status/currentRevision": OLD,
    });
    expect(patch.slice(2).every((op) => op.op === "add")).toBe(true);
    expect(action?.event).toMatchObject({ type: "Normal", reason: "RolloutStarted", action: "Rollout" });
    expect(action?.event?.note).toBe(
      `Rolling out pod revision ${NEW} (was ${OLD}): 2 outdated pod(s); new pods first, up to 1 beyond 2 replicas; running sandboxes keep their pods, replaced once released`,
    );
  });

  it("says a phase change too, in the same write", () => {
    const action = written(
      planStatus(pool(3, "img:1", "v2", { ...settled, phase: "Ready" }), n(2, OLD), NOW),
    );
    expect(reasons(action)).toEqual(["RolloutStarted", "ScalingUp"]);
  });

  it("does not announce again once the start is stored", () => {
    const started: SandboxPoolStatus = { outdatedReplicas: 2, updateRevision: NEW, currentRevision: OLD };
    const action = written(planStatus(pool(2, "img:1", "v2", started), [...n(1, OLD), ...n(2, NEW)], NOW));
    expect(action?.write.op).toBe("status");
    expect(reasons(action)).not.toContain("RolloutStarted");
  });

  it("announces a new revision while a rollout runs", () => {
    const started: SandboxPoolStatus = { outdatedReplicas: 2, updateRevision: NEW, currentRevision: OLD };
    const third = pool(2, "img:1", "v3", started);
    expect(reasons(written(planStatus(third, n(2, NEW), NOW)))).toContain("RolloutStarted");
  });

  it("announces the end once the last outdated pod is gone, moving currentRevision", () => {
    const started: SandboxPoolStatus = { outdatedReplicas: 1, updateRevision: NEW, currentRevision: OLD };
    const action = written(planStatus(pool(2, "img:1", "v2", started), n(2, NEW), NOW));
    const patch = action?.write.op === "patch-status" ? action.write.patch : [];
    expect(patch.slice(0, 2)).toEqual([
      { op: "test", path: "/status/outdatedReplicas", value: 1 },
      { op: "test", path: "/status/updateRevision", value: NEW },
    ]);
    expect(patch).toContainEqual({ op: "add", path: "/status/currentRevision", value: NEW });
    expect(patch).toContainEqual({ op: "add", path: "/status/updatedReplicas", value: 2 });
    expect(action?.event).toMatchObject({
      reason: "RolloutCompleted",
      note: `Every pod is at pod revision ${NEW} (2 pod(s))`,
    });
  });

  it("announces nothing for a status written before rollouts existed, nor when nothing is outdated", () => {
    const legacy = written(planStatus(pool(2, "img:1", "v2", { idleReplicas: 2 }), n(2, OLD), NOW));
    expect(legacy?.write.op).toBe("status");
    expect(legacy?.write.op === "status" && legacy.write.status).toMatchObject({
      outdatedReplicas: 2,
      updateRevision: NEW,
    });
    expect(reasons(legacy)).not.toContain("RolloutStarted");
    // A template change while the pool has no pods: nothing to roll, so no Events.
    const empty = written(planStatus(pool(0, "img:1", "v2", settled), [], NOW));
    expect(reasons(empty).filter((r) => r.startsWith("Rollout"))).toEqual([]);
  });
});
