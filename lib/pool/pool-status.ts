// The status of a pool, computed from the pool and its Pods alone. Recomputing from the same
// state yields the same object (transition times are carried over), so a step writes status
// only when statusChanged says so, and concurrent runs agree on what to write.

import type { V1Pod } from "@kubernetes/client-node";
import type { Condition } from "../api/common.ts";
import {
  POOL_CONDITION,
  POOL_REASON,
  SANDBOX_PHASE,
  SANDBOX_PHASE_LABEL,
  SANDBOX_POOL_LABEL,
} from "../api/keys.ts";
import type { SandboxPool, SandboxPoolPhase, SandboxPoolStatus } from "../api/sandbox-pool.ts";
import { jsonEqual } from "../util/deep-equal.ts";
import { rfc3339 } from "../util/time.ts";
import { pendingRequestsOf } from "./pending-requests.ts";
import { podFacts } from "./pod-facts.ts";

/** PodCounts are the per-phase replica counts of the status. */
interface PodCounts {
  idle: number;
  unavailableIdle: number;
  running: number;
  starting: number;
  stopping: number;
  failed: number;
  total: number;
}

/**
 * countPods counts Pods that are not terminating by sandbox phase. A Pod without a known phase
 * label counts as idle (as upstream does: it is not serving a sandbox); an idle Pod whose PodReady
 * condition is not True also counts as unavailable.
 */
function countPods(pods: readonly V1Pod[]): PodCounts {
  const c: PodCounts = {
    idle: 0,
    unavailableIdle: 0,
    running: 0,
    starting: 0,
    stopping: 0,
    failed: 0,
    total: 0,
  };
  for (const pod of pods) {
    const facts = podFacts(pod);
    if (facts.terminating) continue;
    c.total++;
    if (facts.phase === SANDBOX_PHASE.RUNNING) c.running++;
    else if (facts.phase === SANDBOX_PHASE.STARTING) c.starting++;
    else if (facts.phase === SANDBOX_PHASE.STOPPING) c.stopping++;
    else if (facts.phase === SANDBOX_PHASE.FAILED) c.failed++;
    else {
      c.idle++;
      if (!facts.ready) c.unavailableIdle++;
    }
  }
  return c;
}

/** poolPhase applies the seed's priority: first match wins. */
function poolPhase(pool: SandboxPool, c: PodCounts): SandboxPoolPhase {
  const replicas = pool.spec.replicas;
  if (pool.metadata?.deletionTimestamp) return "Terminating";
  if (replicas === 0 && c.total === 0) return "Pending";
  if (c.total < replicas) return "ScalingUp";
  if (c.total > replicas) return "ScalingDown";
  if (c.unavailableIdle > 0 || c.failed > 0) return "Degraded";
  return "Ready";
}

type ConditionCore = Pick<Condition, "type" | "status" | "reason" | "message">;

/** poolConditions are the Available, Scaling and Degraded conditions for the counts. */
function poolConditions(replicas: number, c: PodCounts): ConditionCore[] {
  const available = c.idle - c.unavailableIdle;
  const availableCondition: ConditionCore =
    available > 0
      ? {
          type: POOL_CONDITION.AVAILABLE,
          status: "True",
          reason: POOL_REASON.IDLE_PODS_AVAILABLE,
          message: `${available} idle pod(s) available`,
        }
      : {
          type: POOL_CONDITION.AVAILABLE,
          status: "False",
          reason: POOL_REASON.NO_IDLE_PODS_AVAILABLE,
          message:
            c.idle > 0
              ? `all ${c.idle} idle pod(s) are unavailable (NotReady)`
              : `no idle pods: ${c.running} running, ${c.starting} starting, ${c.stopping} stopping`,
        };
  const scaling: ConditionCore =
    c.total < replicas
      ? {
          type: POOL_CONDITION.SCALING,
          status: "True",
          reason: POOL_REASON.SCALING_UP,
          message: `scaling up from ${c.total} to ${replicas} replicas`,
        }
      : c.total > replicas
        ? {
            type: POOL_CONDITION.SCALING,
            status: "True",
            reason: POOL_REASON.SCALING_DOWN,
            message: `scaling down from ${c.total} to ${replicas} replicas (${c.running} running)`,
          }
        : {
            type: POOL_CONDITION.SCALING,
            status: "False",
            reason: POOL_REASON.REPLICAS_READY,
            message: `all ${replicas} replicas are present`,
          };
  const [reason, message] =
    c.unavailableIdle > 0 && c.failed > 0
      ? [
          POOL_REASON.UNHEALTHY_AND_FAILED_PODS,
          `${c.unavailableIdle} unavailable idle pod(s) (NotReady), ${c.failed} failed pod(s)`,
        ]
      : c.unavailableIdle > 0
        ? [
            POOL_REASON.UNHEALTHY_IDLE_PODS,
            `${c.unavailableIdle}/${c.idle} idle pod(s) are unavailable (NotReady)`,
          ]
        : c.failed > 0
          ? [POOL_REASON.FAILED_PODS_PRESENT, `${c.failed} pod(s) in failed state`]
          : [POOL_REASON.ALL_PODS_HEALTHY, "all pods are healthy"];
  const degraded: ConditionCore = {
    type: POOL_CONDITION.DEGRADED,
    status: reason === POOL_REASON.ALL_PODS_HEALTHY ? "False" : "True",
    reason,
    message,
  };
  return [availableCondition, scaling, degraded];
}

/**
 * mergeConditions sets each computed condition into the previous list like
 * apimeta.SetStatusCondition: lastTransitionTime is kept when the status did not change and
 * becomes `now` when it did; conditions of other types stay, in their order.
 */
function mergeConditions(
  previous: readonly Condition[],
  computed: readonly ConditionCore[],
  now: Date,
  generation: number | undefined,
): Condition[] {
  const full = (core: ConditionCore): Condition => {
    const prev = previous.find((p) => p.type === core.type);
    const lastTransitionTime = prev && prev.status === core.status ? prev.lastTransitionTime : rfc3339(now);
    return {
      ...core,
      lastTransitionTime,
      ...(generation === undefined ? {} : { observedGeneration: generation }),
    };
  };
  const out = previous.map((p) => {
    const core = computed.find((c) => c.type === p.type);
    return core ? full(core) : p;
  });
  for (const core of computed) if (!previous.some((p) => p.type === core.type)) out.push(full(core));
  return out;
}

/**
 * computePoolStatus is the status a pool should have given its Pods: the phase (Terminating,
 * Pending, ScalingUp, ScalingDown, Degraded, Ready, first match wins), per-phase counts of the
 * Pods that are not terminating, the selector string, structured selector and per-phase
 * selectors (all on the pool label), and the Available, Scaling and Degraded conditions with
 * observedGeneration = metadata.generation, and pendingRequests, the sum of the fresh counts the
 * API hosts published on the pool (see pending-requests.ts; absent until first set). The field it does not
 * own (autoscaling) is copied from the previous status, so writing the result never erases another
 * writer's bookkeeping. `now` is the transition time of conditions that changed and the clock
 * that ages the published counts.
 */
export function computePoolStatus(pool: SandboxPool, pods: readonly V1Pod[], now: Date): SandboxPoolStatus {
  const previous = pool.status ?? {};
  const name = pool.metadata?.name ?? "";
  const counts = countPods(pods);
  const selector = `${SANDBOX_POOL_LABEL}=${name}`;
  const phaseSelectors: Record<string, string> = { all: selector };
  for (const phase of Object.values(SANDBOX_PHASE)) {
    phaseSelectors[phase] = `${selector},${SANDBOX_PHASE_LABEL}=${phase}`;
  }
  const status: SandboxPoolStatus = {
    phase: poolPhase(pool, counts),
    idleReplicas: counts.idle,
    unavailableIdleReplicas: counts.unavailableIdle,
    runningReplicas: counts.running,
    startingReplicas: counts.starting,
    stoppingReplicas: counts.stopping,
    failedReplicas: counts.failed,
    selector,
    labelSelector: { matchLabels: { [SANDBOX_POOL_LABEL]: name } },
    phaseSelectors,
    conditions: mergeConditions(
      previous.conditions ?? [],
      poolConditions(pool.spec.replicas, counts),
      now,
      pool.metadata?.generation,
    ),
  };
  // Written as 0 once it was set (a merge patch cannot drop a field by leaving it out).
  const pending = pendingRequestsOf(pool, now);
  if (pending > 0 || previous.pendingRequests !== undefined) status.pendingRequests = pending;
  if (previous.autoscaling !== undefined) status.autoscaling = previous.autoscaling;
  return status;
}

/**
 * statusChanged reports whether `next` differs from the stored status (structurally, key order
 * ignored), i.e. whether a status write is needed at all.
 */
export function statusChanged(previous: SandboxPoolStatus | undefined, next: SandboxPoolStatus): boolean {
  return !jsonEqual(previous ?? {}, next);
}
