import type { V1Pod } from "@kubernetes/client-node";
import type { PoolScaleDownPolicy } from "../api/autoscaling.ts";
import {
  POOL_FINALIZER,
  SANDBOX_PHASE,
  SANDBOX_PHASE_LABEL,
  SANDBOX_PROTECTION_FINALIZER,
  SCALE_DOWN_PROTECTED_ANNOTATION,
} from "../api/keys.ts";
import type { SandboxPool } from "../api/sandbox-pool.ts";
import { escapePointer, type JsonPatchOp } from "../kube/json-patch.ts";
import type { CreationBlock } from "../pool/creation-block.ts";
import { podName } from "../pool/pod-name.ts";
import { partitionPods } from "../pool/pod-ownership.ts";
import { renderPod } from "../pool/render-pod.ts";
import { idleSinceOf, planScale } from "../pool/scale-plan.ts";
import { rfc3339 } from "../util/time.ts";
import { type Action, guardedDelete, isTerminating, podTarget, poolTarget, testVersion } from "./action.ts";

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
 * - pods missing the protection finalizer (created by an older controller) get it back.
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
        patch: addFinalizer(pool, POOL_FINALIZER),
      },
    });
  }
  for (const pod of pods) {
    if (isTerminating(pod) || pod.metadata?.finalizers?.includes(SANDBOX_PROTECTION_FINALIZER)) continue;
    actions.push({
      target: podTarget(pod),
      why: "add the protection finalizer",
      write: {
        op: "patch",
        patch: addFinalizer(pod, SANDBOX_PROTECTION_FINALIZER),
      },
    });
  }
  const plan = planScale(pool, pods, now, policy, idleSinceOf);
  const byName = new Map(pods.map((p) => [p.metadata?.name ?? "", p]));
  const idleTest = { op: "test" as const, path: PHASE_LABEL, value: SANDBOX_PHASE.IDLE };
  for (const slot of block ? [] : slotsFor(pool, plan.create, pods, squatters)) {
    const object = renderPod(pool, slot);
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
  return actions;
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

/** addFinalizer appends a finalizer under a resourceVersion test (creating the list when absent). */
function addFinalizer(
  obj: { metadata?: { resourceVersion?: string; finalizers?: string[] } },
  finalizer: string,
): JsonPatchOp[] {
  return [
    testVersion(obj),
    obj.metadata?.finalizers
      ? { op: "add", path: "/metadata/finalizers/-", value: finalizer }
      : { op: "add", path: "/metadata/finalizers", value: [finalizer] },
  ];
}
