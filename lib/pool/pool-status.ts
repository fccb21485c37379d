// The status of a pool, computed from the pool and its Pods alone. Recomputing from the same
// state yields the same object (transition times are carried over), so a step writes status
// only when statusChanged says so, and concurrent runs agree on what to write.

import type { V1Pod } from "@kubernetes/client-node";
import {
  POOL_CONDITION,
  POOL_REASON,
  POOL_TEMPLATE_NAME_ANNOTATION,
  SANDBOX_PHASE,
  SANDBOX_PHASE_LABEL,
  SANDBOX_POOL_LABEL,
} from "../crd/keys.ts";
import type { SandboxPool, SandboxPoolPhase, SandboxPoolStatus } from "../crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import { hasEnvOwner } from "../membership/env-ownership.ts";
import { ownedBy } from "../membership/pod-ownership.ts";
import { type ConditionCore, setConditions } from "../util/conditions.ts";
import { jsonEqual } from "../util/deep-equal.ts";
import { pendingRequestsOf } from "./pending-requests.ts";
import { podFacts } from "./pod-facts.ts";
import { podRevision } from "./render-pod.ts";
import { progressingCondition, type RolloutFacts, rolloutFacts } from "./rollout.ts";

/** PodCounts are the per-phase replica counts of the status. */
export interface PodCounts {
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
export function countPods(pods: readonly V1Pod[]): PodCounts {
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

/**
 * poolPhase applies the seed's priority: first match wins. A rollout's surge (pods up to its
 * ceiling) is not a scale-down.
 */
function poolPhase(pool: SandboxPool, c: PodCounts, ceiling: number): SandboxPoolPhase {
  const replicas = pool.spec.replicas;
  if (pool.metadata?.deletionTimestamp) return "Terminating";
  if (replicas === 0 && c.total === 0) return "Pending";
  if (c.total < replicas) return "ScalingUp";
  if (c.total > ceiling) return "ScalingDown";
  if (c.unavailableIdle > 0 || c.failed > 0) return "Degraded";
  return "Ready";
}

/**
 * poolConditions are the Available, Scaling, Degraded and Progressing conditions for the counts; `why`, when
 * given, says what a scale-up or scale-down is waiting for.
 */
function poolConditions(
  replicas: number,
  c: PodCounts,
  why: string | undefined,
  rollout: RolloutFacts,
): ConditionCore[] {
  const waiting = why ? `: ${why}` : "";
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
          message: `scaling up from ${c.total} to ${replicas} replicas${waiting}`,
        }
      : c.total > rollout.ceiling
        ? {
            type: POOL_CONDITION.SCALING,
            status: "True",
            reason: POOL_REASON.SCALING_DOWN,
            message: `scaling down from ${c.total} to ${replicas} replicas (${c.running} running)${waiting}`,
          }
        : {
            type: POOL_CONDITION.SCALING,
            status: "False",
            reason: POOL_REASON.REPLICAS_READY,
            message: `all ${replicas} replicas are present${c.total > replicas ? `, and ${c.total - replicas} more for the rollout (maxSurge ${rollout.maxSurge})` : ""}`,
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
  return [availableCondition, scaling, degraded, progressingCondition(rollout)];
}

/** REPLICA_FAILURE is the condition type that says why Pods are not created (ReplicaSet's name). */
export const REPLICA_FAILURE = "ReplicaFailure";

/**
 * PoolStatusContext is what a run knows beyond the pool and its Pods: why Pods are not created
 * (replicaFailure: set; null: they are, so the condition goes; undefined: unknown this run, so
 * the stored condition stays), whether the pool's template exists (templateAvailable, likewise:
 * see templateAvailability) and what a scale-down waits for.
 */
export interface PoolStatusContext {
  replicaFailure?: { reason: string; message: string } | null;
  templateAvailable?: ConditionCore | null;
  scaleDownWait?: string;
}

/**
 * templateAvailability is the TemplateAvailable condition of a pool that names a template, given
 * the template as this run read it: True while it exists; False once it is gone (TemplateDeleted
 * when the pool was rendered from it, TemplateNotFound when it never was), saying that only admin
 * keys may claim from the pool then (pool-choice.ts fails closed). null for a pool that names
 * none (no condition); undefined when the run did not read the template (the stored one stays).
 */
export function templateAvailability(
  pool: Pick<SandboxPool, "metadata" | "spec">,
  template: SandboxTemplate | null | undefined,
): ConditionCore | null | undefined {
  const name = pool.spec.templateName;
  if (!name) return null;
  if (template === undefined) return undefined;
  const type = POOL_CONDITION.TEMPLATE_AVAILABLE;
  if (template !== null)
    return {
      type,
      status: "True",
      reason: POOL_REASON.TEMPLATE_FOUND,
      message: `SandboxTemplate "${name}" exists`,
    };
  const rendered = hasEnvOwner(pool) || pool.metadata?.annotations?.[POOL_TEMPLATE_NAME_ANNOTATION] === name;
  return {
    type,
    status: "False",
    reason: rendered ? POOL_REASON.TEMPLATE_DELETED : POOL_REASON.TEMPLATE_NOT_FOUND,
    message: `SandboxTemplate "${name}" ${rendered ? "was deleted" : "does not exist"}; only admin API keys may claim from this pool`,
  };
}

/**
 * computePoolStatus is the status a pool should have given its Pods: the phase (Terminating,
 * Pending, ScalingUp, ScalingDown, Degraded, Ready, first match wins), per-phase counts of the
 * Pods that are not terminating, the rollout's counts and revisions (updated and outdated pods,
 * updateRevision, and currentRevision, which moves only once no pod is outdated), the selector string, structured selector and per-phase
 * selectors (all on the pool label), and the Available, Scaling, Degraded and Progressing conditions (with
 * ReplicaFailure and TemplateAvailable as the context says) with observedGeneration = metadata.generation, and pendingRequests, the sum of the fresh counts the
 * API hosts published on the pool (see pending-requests.ts; absent until first set). The field it does not
 * own (autoscaling) is copied from the previous status, so writing the result never erases another
 * writer's bookkeeping. `now` is the transition time of conditions that changed and the clock
 * that ages the published counts.
 */
export function computePoolStatus(
  pool: SandboxPool,
  pods: readonly V1Pod[],
  now: Date,
  context: PoolStatusContext = {},
): SandboxPoolStatus {
  const previous = pool.status ?? {};
  const name = pool.metadata?.name ?? "";
  // Only the pool's own Pods count: one that merely carries the pool label is no replica.
  const owned = pods.filter((pod) => ownedBy(pod, pool));
  const counts = countPods(owned);
  const rollout = rolloutFacts(pool, owned, podRevision(pool));
  const failure = context.replicaFailure ?? undefined;
  const selector = `${SANDBOX_POOL_LABEL}=${name}`;
  const phaseSelectors: Record<string, string> = { all: selector };
  for (const phase of Object.values(SANDBOX_PHASE)) {
    phaseSelectors[phase] = `${selector},${SANDBOX_PHASE_LABEL}=${phase}`;
  }
  const status: SandboxPoolStatus = {
    phase: poolPhase(pool, counts, rollout.ceiling),
    idleReplicas: counts.idle,
    unavailableIdleReplicas: counts.unavailableIdle,
    runningReplicas: counts.running,
    startingReplicas: counts.starting,
    stoppingReplicas: counts.stopping,
    failedReplicas: counts.failed,
    updatedReplicas: rollout.updated,
    outdatedReplicas: rollout.outdated,
    updateRevision: rollout.revision,
    // The revision every pod was at when none was outdated last (kept while a rollout runs).
    ...(rollout.outdated === 0
      ? { currentRevision: rollout.revision }
      : previous.currentRevision !== undefined
        ? { currentRevision: previous.currentRevision }
        : {}),
    selector,
    labelSelector: { matchLabels: { [SANDBOX_POOL_LABEL]: name } },
    phaseSelectors,
    conditions: setConditions(
      previous.conditions ?? [],
      [
        ...poolConditions(
          pool.spec.replicas,
          counts,
          scalingWait(pool, previous, counts, rollout.ceiling, context),
          rollout,
        ),
        ...(failure ? [{ type: REPLICA_FAILURE, status: "True" as const, ...failure }] : []),
        ...(context.templateAvailable ? [context.templateAvailable] : []),
      ],
      now,
      pool.metadata?.generation,
      [
        ...(context.replicaFailure === null ? [REPLICA_FAILURE] : []),
        ...(context.templateAvailable === null ? [POOL_CONDITION.TEMPLATE_AVAILABLE] : []),
      ],
    ),
  };
  // Written as 0 once it was set (a merge patch cannot drop a field by leaving it out).
  const pending = pendingRequestsOf(pool, now);
  if (pending > 0 || previous.pendingRequests !== undefined) status.pendingRequests = pending;
  if (previous.autoscaling !== undefined) status.autoscaling = previous.autoscaling;
  return status;
}

/**
 * scalingWait is what the Scaling condition adds while scaling: why Pods are not created (this
 * run's, else the stored ReplicaFailure's, unless this run cleared it) or what a scale-down waits for.
 */
function scalingWait(
  pool: SandboxPool,
  previous: SandboxPoolStatus,
  counts: PodCounts,
  ceiling: number,
  context: PoolStatusContext,
): string | undefined {
  if (counts.total > ceiling) return context.scaleDownWait;
  if (counts.total > pool.spec.replicas) return undefined;
  if (counts.total === pool.spec.replicas || context.replicaFailure === null) return undefined;
  return (context.replicaFailure ?? previous.conditions?.find((c) => c.type === REPLICA_FAILURE))?.message;
}

/**
 * statusChanged reports whether `next` differs from the stored status (structurally, key order
 * ignored), i.e. whether a status write is needed at all.
 */
export function statusChanged(previous: SandboxPoolStatus | undefined, next: SandboxPoolStatus): boolean {
  return !jsonEqual(previous ?? {}, next);
}
