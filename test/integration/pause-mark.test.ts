import { randomBytes } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { claimSandbox } from "../../functions/claim-sandbox.ts";
import { reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { completePause } from "../../functions/snapshots/complete-pause.ts";
import { execute } from "../../functions/steps/execute.ts";
import { releaseExpired } from "../../functions/steps/release-expired.ts";
import {
  FAILURE_REASON_ANNOTATION,
  PAUSING_ANNOTATION,
  SANDBOX_ID_LABEL,
  STOP_REASON_ANNOTATION,
} from "../../lib/crd/keys.ts";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { pauseMarkPatch } from "../../lib/snapshots/pause-mark.ts";
import { pausePlan } from "../../lib/snapshots/pause-plan.ts";
import { snapshotObject } from "../../lib/snapshots/snapshot-state.ts";
import { kube } from "./support/kube.ts";
import { phaseOf, poolTest, reconcileUntil } from "./support/steps.ts";

// A pause completes with two writes on two objects (the snapshot Paused, then the pod released);
// a release for the sandbox's lifetime must never land between them and end, with a terminal
// record, a sandbox whose snapshot says it is paused (issue #39's review, B8). The pause marks the
// pod first: a lifetime release decided on the unmarked pod fails its precondition, and one that
// sees the mark leaves the pod to the pause, as does the failure step for a container restarted
// once the pause completed. Driven step by step on the real apiserver (kwok).

const t = poolTest("pause-mark");
const { deps } = t;
const IMAGE = "registry.local/sandbox/python:3.12";

/** runningSandbox claims `id` on the pool's idle pod with a 60 s lifetime and runs it. */
async function runningSandbox(pool: string, id: string): Promise<V1Pod> {
  const [idle] = await t.readyPool(pool, 1);
  if (!idle) throw new Error("no idle pod");
  const claimed = await claimSandbox(deps, idle, {
    sandboxId: id,
    containerImages: { sandbox: IMAGE },
    lifetimeSeconds: 60,
  });
  expect(claimed.ok).toBe(true);
  return reconcileUntil(deps, t.ns, pool, `${id} running`, async () => {
    const [p] = await t.pods(pool);
    return p && phaseOf(p) === "running" && p.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
  });
}

/** committedPause writes the snapshot of `pod`'s sandbox as the agent leaves it: Committed. */
async function committedPause(pod: V1Pod): Promise<SandboxSnapshot> {
  const plan = pausePlan(pod, deps.now(), 3600);
  if (!plan.ok) throw new Error(plan.message);
  const ns = t.ns;
  // No finalizer: no agent serves this namespace's node, and the test deletes what it made.
  const object = snapshotObject(ns, plan);
  object.metadata = { ...object.metadata, finalizers: [] };
  const created = await deps.kube.createSnapshot(ns, object);
  const at = deps.now().toISOString();
  return deps.kube.replaceSnapshotStatus(ns, {
    ...created,
    status: {
      phase: SNAPSHOT_PHASE.COMMITTED,
      observedGeneration: created.metadata?.generation ?? 1,
      images: { sandbox: `${IMAGE}-paused` },
      committedAt: at,
    },
  });
}

const podOf = async (pool: string) => {
  const [p] = await t.pods(pool);
  if (!p) throw new Error(`no pod in ${pool}`);
  return p;
};

describe("the pause's mark on its pod", () => {
  it("a lifetime release decided before the mark loses to the pause, which releases the sandbox as Paused", async () => {
    const pod = await runningSandbox("race", "sbx-mark-race");
    const committed = await committedPause(pod);
    deps.clock.offsetMs = 120_000;
    try {
      // The lifetime step decides on the pod as it is now (unmarked, expired)...
      const snapshot = await t.getPool("race");
      const planned = await releaseExpired.plan(deps, { pool: snapshot, pods: [await podOf("race")] });
      expect(planned.map((a) => a.why)).toEqual([expect.stringMatching(/^release expired sandbox/)]);
      // ...the pause completes meanwhile: mark, Paused, released with reason Paused...
      const done = await completePause(deps, committed);
      expect(done.result).toBe("paused");
      const released = await podOf("race");
      expect(released.metadata?.annotations?.[STOP_REASON_ANNOTATION]).toBe("Paused");
      expect(released.metadata?.annotations?.[PAUSING_ANNOTATION]).toBe("1");
      // ...and the late lifetime release fails its precondition.
      const outcomes = await execute(deps, planned);
      expect(outcomes.map((o) => o.result)).toEqual(["conflict"]);
      expect((await podOf("race")).metadata?.annotations?.[STOP_REASON_ANNOTATION]).toBe("Paused");
      // Back to idle without the mark and without a terminal record: the sandbox is paused.
      const idle = await reconcileUntil(deps, t.ns, "race", "pod idle again", async () => {
        const p = await podOf("race");
        return phaseOf(p) === "idle" ? p : undefined;
      });
      expect(idle.metadata?.annotations?.[PAUSING_ANNOTATION]).toBeUndefined();
      expect(idle.metadata?.labels?.[SANDBOX_ID_LABEL]).toBeUndefined();
      expect(await deps.history.get("sbx-mark-race")).toBeUndefined();
    } finally {
      deps.clock.offsetMs = 0;
    }
  });

  it("a marked pod whose snapshot is Paused is left to its pause by the lifetime and idle steps", async () => {
    const pod = await runningSandbox("held", "sbx-mark-held");
    const committed = await committedPause(pod);
    // The pauser crashed between its Paused write and the release: the pod runs on, marked.
    const marked = await deps.kube.patchPod(t.ns, pod.metadata?.name ?? "", pauseMarkPatch(pod, 1));
    const paused = await deps.kube.replaceSnapshotStatus(t.ns, {
      ...committed,
      status: { ...committed.status, phase: SNAPSHOT_PHASE.PAUSED },
    });
    deps.clock.offsetMs = 120_000;
    try {
      await reconcilePool(deps, t.ns, "held");
      const after = await podOf("held");
      expect(phaseOf(after)).toBe("running");
      expect(after.metadata?.resourceVersion).toBe(marked.metadata?.resourceVersion);
      // The sweep's completion releases it as the pause it is.
      expect((await completePause(deps, paused)).result).toBe("paused");
      expect((await podOf("held")).metadata?.annotations?.[STOP_REASON_ANNOTATION]).toBe("Paused");
    } finally {
      deps.clock.offsetMs = 0;
    }
  });

  it("a mark its snapshot no longer backs holds nothing: the sandbox's lifetime ends it", async () => {
    const pod = await runningSandbox("stale", "sbx-mark-stale");
    const committed = await committedPause(pod);
    await deps.kube.patchPod(t.ns, pod.metadata?.name ?? "", pauseMarkPatch(pod, 1));
    // The pause was abandoned (its snapshot deleted): the mark stays on the pod.
    await deps.kube.deleteSnapshot(t.ns, committed.metadata?.name ?? "", {
      resourceVersion: committed.metadata?.resourceVersion ?? "",
    });
    deps.clock.offsetMs = 120_000;
    try {
      await reconcilePool(deps, t.ns, "stale");
      const after = await podOf("stale");
      expect(after.metadata?.annotations?.[STOP_REASON_ANNOTATION]).toBe("Released");
      expect(after.metadata?.annotations?.[FAILURE_REASON_ANNOTATION]).toBe("LifetimeExpired");
    } finally {
      deps.clock.offsetMs = 0;
    }
  });

  it("a container that restarts after the pause completed changes nothing: the pause releases the pod as Paused, no record", async () => {
    const pod = await runningSandbox("restart", "sbx-mark-restart");
    const name = pod.metadata?.name ?? "";
    const committed = await committedPause(pod);
    const marked = await deps.kube.patchPod(t.ns, name, pauseMarkPatch(pod, 1));
    const paused = await deps.kube.replaceSnapshotStatus(t.ns, {
      ...committed,
      status: { ...committed.status, phase: SNAPSHOT_PHASE.PAUSED },
    });
    // The pauser died before the release; then the sandbox's container restarts (a new container
    // id and one more restart, as the kubelet reports them).
    const restarted = structuredClone(marked);
    for (const c of restarted.status?.containerStatuses ?? []) {
      c.containerID = `containerd://${randomBytes(8).toString("hex")}`;
      c.restartCount = (c.restartCount ?? 0) + 1;
    }
    const written = await kube().core.replaceNamespacedPodStatus({ name, namespace: t.ns, body: restarted });
    // A pool run's failure step leaves it to its pause: nothing written to the pod.
    await reconcilePool(deps, t.ns, "restart");
    expect((await podOf("restart")).metadata?.resourceVersion).toBe(written.metadata?.resourceVersion);
    // The sweep's completion releases it as the pause it is, and it goes back to idle unrecorded.
    expect((await completePause(deps, paused)).result).toBe("paused");
    expect((await podOf("restart")).metadata?.annotations?.[STOP_REASON_ANNOTATION]).toBe("Paused");
    const idle = await reconcileUntil(deps, t.ns, "restart", "pod idle again", async () => {
      const p = await podOf("restart");
      return phaseOf(p) === "idle" ? p : undefined;
    });
    expect(idle.metadata?.labels?.[SANDBOX_ID_LABEL]).toBeUndefined();
    expect(await deps.history.get("sbx-mark-restart")).toBeUndefined();
  });
});
