// Autoscaling types: the scale-up/scale-down policies of an Env's autoscaling groups (named
// PoolScale*Policy upstream because they govern each member pool) and the per-pool autoscaler
// bookkeeping that SandboxPool.status.autoscaling carries.
import * as v from "valibot";
import { Int64, listMap, NonNegativeInt32, Time } from "./scalars.ts";

/** PoolScaleUpMode is how much a pool grows per scale-up decision. */
export const PoolScaleUpMode = v.picklist(["Conservative", "Default", "Aggressive"]);
export type PoolScaleUpMode = v.InferOutput<typeof PoolScaleUpMode>;

/**
 * PoolScaleUpPolicy controls scale-up decisions. Every field has a default, so an empty object
 * (the group's own default) is filled in completely by the apiserver and by parse.
 */
export const PoolScaleUpPolicy = v.object({
  mode: v.optional(
    v.pipe(
      PoolScaleUpMode,
      v.description(
        "Growth per decision: Conservative +1, Default +max(1, ceil(current/2)), Aggressive min(current*2, maxReplicas).",
      ),
    ),
    "Default",
  ),
  cooldownSeconds: v.optional(
    v.pipe(NonNegativeInt32, v.description("Minimum seconds between two scale-ups; damps request bursts.")),
    30,
  ),
  idleThresholdSeconds: v.optional(
    v.pipe(
      NonNegativeInt32,
      v.description("Scale up proactively after idle replicas stayed at zero this long; 0 disables it."),
    ),
    30,
  ),
  idleZeroQuietWindowSeconds: v.optional(
    v.pipe(
      NonNegativeInt32,
      v.description(
        "Skip the proactive scale-up when no sandbox create was seen for this long; 0 disables the gate.",
      ),
    ),
    300,
  ),
  saturationCooldownSeconds: v.optional(
    v.pipe(
      NonNegativeInt32,
      v.description("How long a member stays saturated after an insufficient or invalid admission probe."),
    ),
    60,
  ),
});
export type PoolScaleUpPolicy = v.InferOutput<typeof PoolScaleUpPolicy>;

/** PoolScaleDownPolicy controls scale-down decisions; every field has a default. */
export const PoolScaleDownPolicy = v.object({
  idleTimeoutSeconds: v.optional(
    v.pipe(NonNegativeInt32, v.description("Seconds a Pod must stay idle before it may be scaled down.")),
    300,
  ),
  stabilizationSeconds: v.optional(
    v.pipe(NonNegativeInt32, v.description("Minimum seconds between two scale-downs; prevents thrashing.")),
    60,
  ),
  protectionWindowSeconds: v.optional(
    v.pipe(
      NonNegativeInt32,
      v.description("Seconds a Pod marked for scale-down can still be claimed, cancelling the scale-down."),
    ),
    10,
  ),
});
export type PoolScaleDownPolicy = v.InferOutput<typeof PoolScaleDownPolicy>;

/** AGGRESSIVE_REQUIRES_MAX_REPLICAS_RULE is the CEL rule on every Env autoscaling group. */
export const AGGRESSIVE_REQUIRES_MAX_REPLICAS_RULE =
  "self.scaleUpPolicy.mode != 'Aggressive' || has(self.maxReplicas)";
/** AGGRESSIVE_REQUIRES_MAX_REPLICAS_MESSAGE is that rule's message, as the seed spells it. */
export const AGGRESSIVE_REQUIRES_MAX_REPLICAS_MESSAGE =
  "Aggressive scaleUpPolicy.mode requires maxReplicas to be set on the group — Aggressive doubles the replica count each cooldown and would otherwise grow without bound";

/**
 * EnvAutoscalingGroup is one Env autoscaling unit, applied jointly to the members whose
 * scalingGroup names it. Aggressive growth needs a ceiling: the CEL rule makes the apiserver
 * enforce it and the v.check makes parse agree.
 */
export const EnvAutoscalingGroup = v.pipe(
  v.object({
    name: v.pipe(v.string(), v.description("Matches the scalingGroup of at least one member; the list key.")),
    enabled: v.optional(
      v.pipe(
        v.boolean(),
        v.description("Whether the autoscaler manages this group; false means manual replicas."),
      ),
      false,
    ),
    minReplicas: v.optional(
      v.pipe(NonNegativeInt32, v.description("Lower bound of the group's aggregate replicas.")),
      0,
    ),
    maxReplicas: v.optional(
      v.pipe(
        NonNegativeInt32,
        v.description("Upper bound of the group's aggregate replicas; unset means no group ceiling."),
      ),
    ),
    scaleUpPolicy: v.optional(
      v.pipe(PoolScaleUpPolicy, v.description("How scale-up decisions are made; every field is defaulted.")),
      {},
    ),
    scaleDownPolicy: v.optional(
      v.pipe(
        PoolScaleDownPolicy,
        v.description("How scale-down decisions are made; every field is defaulted."),
      ),
      {},
    ),
  }),
  v.check(
    (group) => group.scaleUpPolicy.mode !== "Aggressive" || group.maxReplicas !== undefined,
    AGGRESSIVE_REQUIRES_MAX_REPLICAS_MESSAGE,
  ),
  v.metadata({
    "x-kubernetes-validations": [
      { rule: AGGRESSIVE_REQUIRES_MAX_REPLICAS_RULE, message: AGGRESSIVE_REQUIRES_MAX_REPLICAS_MESSAGE },
    ],
  }),
);
export type EnvAutoscalingGroup = v.InferOutput<typeof EnvAutoscalingGroup>;

/** EnvAutoscalingSpec configures the Env autoscaler; each group is enabled on its own. */
export const EnvAutoscalingSpec = v.object({
  groups: v.optional(
    v.pipe(listMap(EnvAutoscalingGroup, "name"), v.description("Autoscaling groups, keyed by name.")),
  ),
});
export type EnvAutoscalingSpec = v.InferOutput<typeof EnvAutoscalingSpec>;

/** PoolScaleUpAttemptResult is the outcome of the last scale-up admission probe of a pool. */
export const PoolScaleUpAttemptResult = v.picklist(["Enough", "JustRight", "Insufficient", "Failed"]);
export type PoolScaleUpAttemptResult = v.InferOutput<typeof PoolScaleUpAttemptResult>;

/**
 * PoolAutoScalingStatus is the pool autoscaler's decision-time bookkeeping; only the pool
 * reconciler writes it (never the Env reconciler). Absent when the group is not autoscaled.
 */
export const PoolAutoScalingStatus = v.object({
  lastScaleUpTime: v.optional(
    v.pipe(Time, v.description("Last scale-up that increased spec.replicas; drives cooldownSeconds.")),
  ),
  lastScaleDownTime: v.optional(
    v.pipe(Time, v.description("Last scale-down that decreased spec.replicas; drives stabilizationSeconds.")),
  ),
  idleZeroSince: v.optional(
    v.pipe(Time, v.description("Start of the current zero-idle window; drives idleThresholdSeconds.")),
  ),
  lastScaleUpAttemptTime: v.optional(
    v.pipe(
      Time,
      v.description("Last scale-up admission probe, whatever its result; drives the saturation cooldown."),
    ),
  ),
  lastScaleUpAttemptResult: v.optional(
    v.pipe(PoolScaleUpAttemptResult, v.description("Result of the last probe; empty before the first one.")),
  ),
  scaleUpErrorMessage: v.optional(
    v.pipe(
      v.string(),
      v.description("One-line description of the last non-Enough result, for the dashboard."),
    ),
  ),
  observedGeneration: v.optional(
    v.pipe(Int64, v.description("metadata.generation observed when this block was last written.")),
  ),
});
export type PoolAutoScalingStatus = v.InferOutput<typeof PoolAutoScalingStatus>;
