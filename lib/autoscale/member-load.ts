// What the autoscaler reads about one member of a group, taken from the member, its pool and the
// pool's Pods: counts, demand, idle times and the autoscaler's own bookkeeping.
import type { V1Pod } from "@kubernetes/client-node";
import type { PoolAutoScalingStatus } from "../crd/autoscaling.ts";
import { LAST_SANDBOX_CREATE_TIME_ANNOTATION, SANDBOX_PHASE } from "../crd/keys.ts";
import type { EnvClusterMember, EnvClusterMemberConfig } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { isTerminating } from "../kube/action.ts";
import { resetBlocker } from "../lifecycle/reset-progress.ts";
import { memberReplicas } from "../membership/env-members.ts";
import { pendingRequestsOf } from "../pool/pending-requests.ts";
import { podFacts } from "../pool/pod-facts.ts";
import { idleSinceOf } from "../pool/scale-plan.ts";
import { parseTime } from "../util/time.ts";
import { type ProbeResult, probe } from "./probe.ts";

/** IdlePod is one idle Pod and when it became idle (undefined: unknown, never a candidate). */
export interface IdlePod {
  name: string;
  since: Date | undefined;
}

/** MemberLoad is one member as the autoscaler sees it. */
export interface MemberLoad {
  name: string;
  clusterId: string;
  config?: EnvClusterMemberConfig | undefined;
  /** desired is the member's replicas on the Env (what the autoscaler writes). */
  desired: number;
  /** pool is the live member pool; undefined when it is missing or being deleted (not scaled). */
  pool?: SandboxPool | undefined;
  /** existing counts the pool's Pods not being deleted, in any phase. */
  existing: number;
  /** idle lists the idle Pods not being deleted. */
  idle: IdlePod[];
  /** stopping counts Pods being reset to idle that will serve the next claim (no resetBlocker). */
  stopping: number;
  /** pending is the creates waiting on this pool: the hosts' fresh marks, less waiters served. */
  pending: number;
  /** lastCreate is the pool's last-sandbox-create-time, when readable. */
  lastCreate: Date | undefined;
  /** autoscaling is the pool's stored status.autoscaling. */
  autoscaling: PoolAutoScalingStatus | undefined;
  /** probe says whether the cluster would take more of this pool's Pods. */
  probe: ProbeResult;
}

/**
 * loadMember reads one member for the autoscaler from the member on the Env, its pool (undefined
 * when missing) and the pool's Pods; `served` (servedMarks over the group's Pods: a waiter may
 * claim a Pod of any member) takes the waiters already served off the pool's pending marks.
 */
export function loadMember(
  member: EnvClusterMember,
  clusterId: string,
  pool: SandboxPool | undefined,
  pods: readonly V1Pod[],
  now: Date,
  served: ReadonlyMap<string, number> = new Map(),
): MemberLoad {
  const live = pool && !isTerminating(pool) ? pool : undefined;
  const facts = pods.map((pod) => ({ pod, facts: podFacts(pod) })).filter((p) => !p.facts.terminating);
  return {
    name: member.name,
    clusterId,
    config: member.config,
    desired: memberReplicas(member),
    pool: live,
    existing: facts.length,
    idle: facts
      .filter((p) => p.facts.phase === SANDBOX_PHASE.IDLE)
      .map((p) => ({ name: p.facts.name, since: idleSinceOf(p.pod) })),
    // A reset that stalled, timed out or ends in a replacement serves nobody: not supply.
    stopping: facts.filter(
      (p) => p.facts.phase === SANDBOX_PHASE.STOPPING && !(pool && resetBlocker(p.pod, pool, now)),
    ).length,
    pending: live ? pendingRequestsOf(live, now, served) : 0,
    lastCreate: parseTime(live?.metadata?.annotations?.[LAST_SANDBOX_CREATE_TIME_ANNOTATION]),
    autoscaling: live?.status?.autoscaling,
    probe: live ? probe(live, pods) : { result: "Enough" },
  };
}
