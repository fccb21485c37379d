// A pool's rollout (ADR 0031): when its pod template changes, pods rendered from the older one are
// replaced without a gap in warm capacity. New pods come first, up to maxSurge beyond replicas; an
// outdated idle pod goes only while the claimable idle pods that stay are at least what the pool
// holds at rest; busy pods are never touched (a release resets them in place, or replaces them
// once their successors stand: podReset). Every decision here is a level: any run, repeated,
// concurrent or late, derives it from what it reads.
import type { V1Pod } from "@kubernetes/client-node";
import { POOL_CONDITION, POOL_REASON, SANDBOX_PHASE } from "../crd/keys.ts";
import { DEFAULT_MAX_SURGE, type SandboxPool } from "../crd/sandbox-pool.ts";
import { outdatedFor } from "../lifecycle/pod-revision.ts";
import type { ConditionCore } from "../util/conditions.ts";
import { claimableState, podFacts } from "./pod-facts.ts";

/** MaxSurge is a parsed rollout.maxSurge: a number of pods, or a percentage of replicas. */
export type MaxSurge = { count: number } | { percent: number };

/**
 * parseMaxSurge reads a rollout.maxSurge value: an integer of at least 1, or a string "N%" with
 * N from 1 (as a Deployment's maxSurge, beyond 100 % allowed). Anything else is undefined: 0 is
 * refused because without a surge nothing could stand ready in an outdated pod's place.
 */
export function parseMaxSurge(value: unknown): MaxSurge | undefined {
  if (typeof value === "number")
    return Number.isSafeInteger(value) && value >= 1 && value < 2 ** 31 ? { count: value } : undefined;
  if (typeof value !== "string") return undefined;
  const match = /^([1-9][0-9]{0,5})%$/.exec(value);
  return match ? { percent: Number(match[1]) } : undefined;
}

/**
 * maxSurgeOf is how many pods beyond replicas the pool may run while it has outdated pods: the
 * count given, or the percentage of replicas rounded up, at least 1. An unset value, or one that
 * does not parse (admission refuses those; one stored before that check), is DEFAULT_MAX_SURGE.
 */
export function maxSurgeOf(pool: SandboxPool): number {
  const parsed = parseMaxSurge(pool.spec.rollout?.maxSurge) ?? (parseMaxSurge(DEFAULT_MAX_SURGE) as MaxSurge);
  const pods = "count" in parsed ? parsed.count : Math.ceil((parsed.percent * pool.spec.replicas) / 100);
  return Math.max(1, pods);
}

/** RolloutFacts are a pool's pods as a rollout sees them (pods not terminating only). */
export interface RolloutFacts {
  /** revision is the pool's current pod revision (podRevision). */
  revision: string;
  /** updated: pods at revision, or with no revision label (made before rollouts: current). */
  updated: number;
  /** outdated: pods labelled with another revision; idle and busy (any other phase) apart. */
  outdated: number;
  outdatedIdle: number;
  /** ceiling is how many pods the pool may run now: replicas, plus maxSurge while any is outdated. */
  ceiling: number;
  /** maxSurge is the pool's resolved maxSurge (whether or not a rollout is under way). */
  maxSurge: number;
}

/** rolloutFacts counts the live pods (not terminating) of `pods` against the pool's `revision`. */
export function rolloutFacts(pool: SandboxPool, pods: readonly V1Pod[], revision: string): RolloutFacts {
  let updated = 0;
  let outdated = 0;
  let outdatedIdle = 0;
  for (const pod of pods) {
    const facts = podFacts(pod);
    if (facts.terminating) continue;
    if (!outdatedFor(pod, revision)) updated++;
    else {
      outdated++;
      if (facts.phase === SANDBOX_PHASE.IDLE) outdatedIdle++;
    }
  }
  const maxSurge = maxSurgeOf(pool);
  return {
    revision,
    updated,
    outdated,
    outdatedIdle,
    ceiling: pool.spec.replicas + (outdated > 0 ? maxSurge : 0),
    maxSurge,
  };
}

const byName = (a: V1Pod, b: V1Pod) => {
  const [x, y] = [a.metadata?.name ?? "", b.metadata?.name ?? ""];
  return x < y ? -1 : x > y ? 1 : 0;
};

/**
 * rolloutDeletes names the outdated idle pods a rollout deletes now, from the pool's pods that
 * stay (neither terminating nor replaced) while they are within the rollout's ceiling (the
 * caller's check):
 *
 * - outdated idle pods that cannot take a claim (not Ready, or not Running) all go: they hold no
 *   warm capacity, and the pool puts current pods in their place;
 * - of the claimable ones, only as many as stand spare: claimable idle pods (Ready, Running, not
 *   marked for scale-down, any revision) beyond what the pool holds idle at rest (replicas minus
 *   its busy pods), and no more than the pods above replicas. A new pod is Ready first, then an
 *   old one goes: claimable idle pods never drop below the at-rest count by a rollout's delete.
 *
 * Pods marked for scale-down are left to the scale-down. Names are sorted, so runs from the same
 * read pick the same pods; the caller deletes with uid and resourceVersion preconditions, so a
 * pod claimed since the read is never deleted and no pod is deleted twice.
 */
export function rolloutDeletes(pool: SandboxPool, staying: readonly V1Pod[], revision: string): string[] {
  const idle = staying.filter((p) => podFacts(p).phase === SANDBOX_PHASE.IDLE);
  const unmarked = idle.filter((p) => podFacts(p).scaleDownMark === undefined);
  const claimable = unmarked.filter(claimableState);
  const outdated = unmarked.filter((p) => outdatedFor(p, revision)).sort(byName);
  const atRest = Math.max(0, pool.spec.replicas - (staying.length - idle.length));
  const spare = Math.min(claimable.length - atRest, staying.length - pool.spec.replicas);
  const cold = outdated.filter((p) => !claimableState(p));
  const warm = outdated.filter(claimableState).slice(0, Math.max(0, spare));
  return [...cold, ...warm].map((p) => p.metadata?.name ?? "");
}

/**
 * progressingCondition is the Progressing condition: True (RolloutInProgress) while pods of an outdated
 * pod revision remain, False (RolloutComplete) once every pod is at the current one.
 */
export function progressingCondition(r: RolloutFacts): ConditionCore {
  if (r.outdated === 0)
    return {
      type: POOL_CONDITION.PROGRESSING,
      status: "False",
      reason: POOL_REASON.ROLLOUT_COMPLETE,
      message: `every pod is at pod revision ${r.revision} (${r.updated} pod(s))`,
    };
  const busy = r.outdated - r.outdatedIdle;
  return {
    type: POOL_CONDITION.PROGRESSING,
    status: "True",
    reason: POOL_REASON.ROLLOUT_IN_PROGRESS,
    message: `rolling out pod revision ${r.revision}: ${r.updated} pod(s) updated, ${r.outdated} outdated (${r.outdatedIdle} idle, replaced once a new pod is ready, up to ${r.maxSurge} extra pod(s); ${busy} with a sandbox, replaced when it is released)`,
  };
}
