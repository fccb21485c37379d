import type { V1Pod } from "@kubernetes/client-node";
import type { PoolScaleDownPolicy } from "../crd/autoscaling.ts";
import {
  POD_REVISION_LABEL,
  POOL_FINALIZER,
  SANDBOX_PHASE,
  SANDBOX_PHASE_LABEL,
  SANDBOX_PROTECTION_FINALIZER,
  SCALE_DOWN_PROTECTED_ANNOTATION,
} from "../crd/keys.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import {
  type Action,
  guardedDelete,
  isTerminating,
  podTarget,
  poolTarget,
  testVersion,
} from "../kube/action.ts";
import { escapePointer, type JsonPatchOp } from "../kube/json-patch.ts";
import { revisionOf } from "../lifecycle/pod-revision.ts";
import { partitionPods } from "../membership/pod-ownership.ts";
import type { CreationBlock } from "../pool/creation-block.ts";
import { podName } from "../pool/pod-name.ts";
import { podRevision, renderPod } from "../pool/render-pod.ts";
import { idleSinceOf, planScale } from "../pool/scale-plan.ts";
import { rfc3339 } from "../util/time.ts";

const MARK = `/metadata/annotations/${escapePointer(SCALE_DOWN_PROTECTED_ANNOTATION)}`;
const PHASE_LABEL = `/metadata/labels/${escapePointer(SANDBOX_PHASE_LABEL)}`;

/**
 * planMaterialise makes the pool's pods match spec.replicas and owns the pool's lifecycle:
 * - the pool carries our finalizer, so its deletion waits until every pod (and every record) is
 *   handled; on deletion all pods are deleted and the finalizer goes once none is left;
 * - missing pods are created under deterministic slot names (see lib/pool/pod-name.ts), so
 *   concurrent runs collide instead of overshooting; none while `block` says the pool cannot
 *   render them (no template copy yet, no usable container);
 * - surplus idle pods are marked, then deleted after the protection window, with the mark and the
 *   idle phase as patch/delete preconditions, so a claim in between always wins;
 * - during a rollout (pods of an outdated pod revision; ADR 0031), new pods are created first and
 *   outdated idle pods deleted as planScale says, each delete preconditioned on the pod version read;
 * - pods missing the protection finalizer or the pod-revision label (created by an older
 *   controller) get them: the label says the pool's current revision, so pods made before
 *   rollouts are taken as current (no rollout on upgrade) and a later template change rolls them.
 *
 * Only the pool's own pods count (partitionPods); a foreign pod (`foreign`, or one in `listed` the
 * pool does not own) never fills a replica and is never patched or deleted. Its name still blocks
 * a create: a slot it squats on is replaced by the lowest free slot at or above replicas (see
 * slotsFor).
 */
export function planMaterialise(
  pool: SandboxPool,
  listed: readonly V1Pod[],
  policy: PoolScaleDownPolicy,
  now: Date,
  block?: CreationBlock,
  foreign: readonly V1Pod[] = [],
): Action[] {
  const { owned: pods, foreign: unowned } = partitionPods(pool, listed);
  const squatters = [...foreign, ...unowned];
  const finalizers = pool.metadata?.finalizers ?? [];
  if (isTerminating(pool)) {
    const live = pods.filter((p) => !isTerminating(p));
    const deletes = live.map(
      (pod): Action => ({ target: podTarget(pod), why: "pool is being deleted", write: guardedDelete(pod) }),
    );
    const index = finalizers.indexOf(POOL_FINALIZER);
    if (pods.length > 0 || index < 0) return deletes;
    return [
      {
        target: poolTarget(pool),
        why: "every pod is gone; let the pool go",
        write: {
          op: "patch",
          patch: [testVersion(pool), { op: "remove", path: `/metadata/finalizers/${index}` }],
        },
      },
    ];
  }
  const actions: Action[] = [];
  if (!finalizers.includes(POOL_FINALIZER)) {
    actions.push({
      target: poolTarget(pool),
      why: "add the pool finalizer",
      write: {
        op: "patch",
        patch: [testVersion(pool), addFinalizer(pool, POOL_FINALIZER)],
      },
    });
  }
  const revision = podRevision(pool);
  for (const pod of pods) {
    if (isTerminating(pod)) continue;
    const missing = [
      ...(pod.metadata?.finalizers?.includes(SANDBOX_PROTECTION_FINALIZER)
        ? []
        : ["the protection finalizer"]),
      ...(revisionOf(pod) === undefined ? ["the pod-revision label"] : []),
    ];
    if (missing.length === 0) continue;
    actions.push({
      target: podTarget(pod),
      why: `add ${missing.join(" and ")}`,
      write: {
        op: "patch",
        patch: [
          testVersion(pod),
          ...(pod.metadata?.finalizers?.includes(SANDBOX_PROTECTION_FINALIZER)
            ? []
            : [addFinalizer(pod, SANDBOX_PROTECTION_FINALIZER)]),
          ...(revisionOf(pod) === undefined ? [addRevisionLabel(pod, revision)] : []),
        ],
      },
    });
  }
  const plan = planScale(pool, pods, now, policy, idleSinceOf, revision);
  const byName = new Map(pods.map((p) => [p.metadata?.name ?? "", p]));
  const idleTest = { op: "test" as const, path: PHASE_LABEL, value: SANDBOX_PHASE.IDLE };
  for (const slot of block ? [] : slotsFor(pool, plan.create, pods, squatters)) {
    const object = renderPod(pool, slot, revision);
    actions.push({
      target: podTarget(object),
      why: `create pod in slot ${slot}`,
      write: { op: "create", object },
    });
  }
  for (const name of plan.protect) {
    const pod = byName.get(name);
    if (!pod) continue;
    actions.push({
      target: podTarget(pod),
      why: "mark idle pod for scale-down",
      write: {
        op: "patch",
        patch: [
          testVersion(pod),
          idleTest,
          ...(pod.metadata?.annotations
            ? []
            : [{ op: "add" as const, path: "/metadata/annotations", value: {} }]),
          { op: "add", path: MARK, value: rfc3339(now) },
        ],
      },
    });
  }
  for (const name of plan.unprotect) {
    const pod = byName.get(name);
    if (!pod) continue;
    actions.push({
      target: podTarget(pod),
      why: "scale-down no longer needed; unmark",
      write: { op: "patch", patch: [testVersion(pod), { op: "remove", path: MARK }] },
    });
  }
  for (const name of plan.delete) {
    const pod = byName.get(name);
    if (pod)
      actions.push({
        target: podTarget(pod),
        why: "scale down: delete marked idle pod",
        write: guardedDelete(pod),
      });
  }
  for (const name of plan.replace) {
    const pod = byName.get(name);
    if (pod)
      actions.push({
        target: podTarget(pod),
        why: `${ROLLOUT_DELETE} (pod revision ${revisionOf(pod)}, now ${revision})`,
        write: guardedDelete(pod),
      });
  }
  return actions;
}

/** ROLLOUT_DELETE begins the `why` of a rollout's delete of an outdated idle pod. */
const ROLLOUT_DELETE = "rollout: delete outdated idle pod";

/**
 * deletesForRollout tells whether planned actions delete pods for a rollout: a decision that
 * weighs every other pod's state (how many claimable idle pods stay), so the caller takes it on a
 * read of its own rather than on a tick's list, which may be a period's spread old.
 */
export function deletesForRollout(actions: readonly Action[]): boolean {
  return actions.some((a) => a.write.op === "delete" && a.why.startsWith(ROLLOUT_DELETE));
}

/**
 * slotsFor is the slots to create pods in: the plan's, except that a slot whose name a foreign pod
 * holds (a create there can only fail) becomes the lowest slot at or above replicas no pod holds.
 * Runs that see the same pods still pick the same names; one that does not see a squatter
 * overshoots by at most that pod, which the scale-down then removes.
 */
function slotsFor(
  pool: SandboxPool,
  planned: readonly number[],
  pods: readonly V1Pod[],
  squatters: readonly V1Pod[],
): number[] {
  const poolName = pool.metadata?.name ?? "";
  const squatted = new Set(squatters.map((p) => p.metadata?.name ?? ""));
  if (squatted.size === 0) return [...planned];
  // The plan's own slots too: a surge slot past replicas (planScale) is not a spare.
  const taken = new Set([
    ...squatted,
    ...pods.map((p) => p.metadata?.name ?? ""),
    ...planned.map((slot) => podName(poolName, slot)),
  ]);
  let spare = pool.spec.replicas;
  return planned.map((slot) => {
    if (!squatted.has(podName(poolName, slot))) return slot;
    while (taken.has(podName(poolName, spare))) spare++;
    return spare++;
  });
}

/** addFinalizer appends a finalizer (creating the list when absent); callers test the version first. */
function addFinalizer(obj: { metadata?: { finalizers?: string[] } }, finalizer: string): JsonPatchOp {
  return obj.metadata?.finalizers
    ? { op: "add", path: "/metadata/finalizers/-", value: finalizer }
    : { op: "add", path: "/metadata/finalizers", value: [finalizer] };
}

/** addRevisionLabel sets POD_REVISION_LABEL (creating the labels when absent); callers test the version first. */
function addRevisionLabel(pod: V1Pod, revision: string): JsonPatchOp {
  return pod.metadata?.labels
    ? { op: "add", path: `/metadata/labels/${escapePointer(POD_REVISION_LABEL)}`, value: revision }
    : { op: "add", path: "/metadata/labels", value: { [POD_REVISION_LABEL]: revision } };
}
