// The autoscaler's decision for one Env group, as data: what decide (decide.ts) reads, the
// options the host passes it, and what it returns for the step to write.
import type { EnvAutoscalingGroup, PoolAutoScalingStatus } from "../crd/autoscaling.ts";
import type { GroupStamp } from "./group-stamps.ts";
import type { MemberLoad } from "./member-load.ts";

/** GroupSnapshot is one group's spec, its members (all of them, pools missing or not) and stamps. */
export interface GroupSnapshot {
  group: EnvAutoscalingGroup;
  members: MemberLoad[];
  /** stamp is when the group last scaled, as the Env records it (see group-stamps.ts). */
  stamp?: GroupStamp | undefined;
}

/**
 * CooldownMode says what a reactive scale-up may do within cooldownSeconds of the last scale-up.
 * "waiters" (the default): add just the waiting demand; "strict": nothing, the seed's literal
 * reading of cooldownSeconds as the minimum gap between scale-ups (the bounds still apply). Not a
 * policy field: the autoscaler bench passes "strict" to compare the two (ADR 0034).
 */
export type CooldownMode = "waiters" | "strict";

/** DecideOptions are the decider's settings that are not the group's policy (the host passes them). */
export interface DecideOptions {
  cooldownMode?: CooldownMode;
}

/** SCALE_REASON says why a member's replicas moved. */
export const SCALE_REASON = {
  /** REACTIVE: creates are waiting that no idle, resetting or ordered Pod will serve. */
  REACTIVE: "Reactive",
  /** IDLE_ZERO: the group had no idle Pod for idleThresholdSeconds while creates kept coming. */
  IDLE_ZERO: "IdleZero",
  BELOW_MIN: "BelowMinReplicas",
  ABOVE_MAX: "AboveMaxReplicas",
  /** IDLE_TIMEOUT: Pods stayed idle for idleTimeoutSeconds. */
  IDLE_TIMEOUT: "IdleTimeout",
} as const;
export type ScaleReason = (typeof SCALE_REASON)[keyof typeof SCALE_REASON];

/** ScaleChange is one member's replicas moving, with why. */
export interface ScaleChange {
  member: string;
  direction: "up" | "down";
  reason: ScaleReason;
  from: number;
  to: number;
}

/** GroupDecision is what one run should write for a group; empty when nothing changes. */
export interface GroupDecision {
  group: string;
  /** replicas: the new replicas of each member whose replicas change. */
  replicas: Map<string, number>;
  /** autoscaling: the next status.autoscaling of each pool whose block changes. */
  autoscaling: Map<string, PoolAutoScalingStatus>;
  changes: ScaleChange[];
  /** stamp is the group's stamp to write with the replicas; undefined when nothing scaled. */
  stamp?: GroupStamp;
}
