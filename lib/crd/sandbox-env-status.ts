// SandboxEnv status: per-cluster observed members, per-scaling-group totals and env-wide rollups
// (the rollups exist because printer columns cannot sum nested arrays).
import * as v from "valibot";
import { Conditions, Int32, listMap, ResourceRequirements, Time } from "./common.ts";

/** ObservedMemberState is whether a member pool can serve requests. */
export const ObservedMemberState = v.picklist(["Active", "Saturated", "Missing", "Inconsistent"]);
export type ObservedMemberState = v.InferOutput<typeof ObservedMemberState>;

/** count is an optional Int32 counter of the Env status. */
function count(description: string) {
  return v.optional(v.pipe(Int32, v.description(description)));
}

/** EnvObservedMember is the runtime state of one member pool, mirrored from its status. */
export const EnvObservedMember = v.object({
  name: v.pipe(v.string(), v.description("The spec member's name; the list key.")),
  instanceType: v.optional(v.pipe(v.string(), v.description("Echo of the member's instance type."))),
  multiplier: count("Echo of the member's multiplier."),
  effectiveResources: v.optional(
    v.pipe(
      ResourceRequirements,
      v.description("Resolved per-Pod resources (instance type × multiplier, or the inline resources)."),
    ),
  ),
  state: v.optional(
    v.pipe(
      ObservedMemberState,
      v.description(
        "Active: eligible; Saturated: at its ceiling or out of quota; Missing: pool gone; Inconsistent: drifted.",
      ),
    ),
  ),
  idleCount: count("Idle Pods, from the pool status."),
  runningCount: count("Running Pods, from the pool status."),
  desiredReplicas: count("Last value the autoscaler patched onto the pool's spec.replicas."),
  currentReplicas: count("Value last observed on the pool's spec.replicas."),
  pendingRequests: count("Claim queue length, from the pool status."),
  saturatedUntil: v.optional(
    v.pipe(
      Time,
      v.description(
        "The member is held back from routing and scaling until then (mirror of the pool autoscaler).",
      ),
    ),
  ),
});
export type EnvObservedMember = v.InferOutput<typeof EnvObservedMember>;

/** EnvClusterStatus is the observed state of one cluster segment. */
export const EnvClusterStatus = v.object({
  clusterID: v.pipe(v.string(), v.description("The spec segment's clusterID; the list key.")),
  isLocal: v.optional(
    v.pipe(
      v.boolean(),
      v.description("True on the worker that owns this cluster's pools; only it writes the segment."),
    ),
  ),
  observedMembers: v.optional(
    v.pipe(listMap(EnvObservedMember, "name"), v.description("Per-member runtime state, keyed by name.")),
  ),
  lastSnapshotTime: v.optional(
    v.pipe(Time, v.description("When the segment was last written (local) or received (hub sync).")),
  ),
});
export type EnvClusterStatus = v.InferOutput<typeof EnvClusterStatus>;

/** EnvScalingGroupStatus aggregates one scaling group across all members. */
export const EnvScalingGroupStatus = v.object({
  name: v.pipe(v.string(), v.description("The autoscaling group's name; the list key.")),
  totalIdle: count("Idle Pods summed over the group's members."),
  totalRunning: count("Running Pods summed over the group's members."),
  totalDesired: count("Desired replicas summed over the group's members."),
});
export type EnvScalingGroupStatus = v.InferOutput<typeof EnvScalingGroupStatus>;

/** SandboxEnvStatus is the observed state of an Env. */
export const SandboxEnvStatus = v.pipe(
  v.object({
    conditions: v.optional(
      v.pipe(Conditions, v.description("Env health: Ready, TemplateConsistent, AutoscalingActive.")),
    ),
    clusters: v.optional(
      v.pipe(
        listMap(EnvClusterStatus, "clusterID"),
        v.description("Per-cluster observed state; a worker writes only its local segment."),
      ),
    ),
    scalingGroups: v.optional(
      v.pipe(
        listMap(EnvScalingGroupStatus, "name"),
        v.description("Per-scaling-group totals, keyed by name."),
      ),
    ),
    memberCount: count("Member pools summed over all cluster segments."),
    desiredReplicas: count("Desired replicas summed over all observed members."),
    runningReplicas: count("Running Pods summed over all observed members."),
    idleReplicas: count("Idle Pods summed over all observed members."),
  }),
  v.description("Observed state of the SandboxEnv."),
);
export type SandboxEnvStatus = v.InferOutput<typeof SandboxEnvStatus>;
