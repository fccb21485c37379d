// SandboxEnv (namespaced): one class of sandbox runtime (bound to one SandboxTemplate) served by
// member SandboxPools spread over clusters, with Env-level autoscaling and overrides.
import * as v from "valibot";
import { EnvAutoscalingSpec } from "./autoscaling.ts";
import {
  Duration,
  Int32,
  kindObject,
  listMap,
  listObject,
  NonNegativeInt32,
  ResourceRequirements,
  requiredWithDefault,
  StringMap,
} from "./common.ts";
import { KIND } from "./keys.ts";
import { SandboxEnvStatus } from "./sandbox-env-status.ts";
import { PodCreationImagePolicy, SandboxPoolSpec } from "./sandbox-pool.ts";

/** SandboxEnvMode is how an Env satisfies sandbox creates; only WarmPool is implemented. */
export const SandboxEnvMode = v.picklist(["WarmPool", "OnDemandJob"]);
export type SandboxEnvMode = v.InferOutput<typeof SandboxEnvMode>;

/** SandboxEnvTemplateRef points at the cluster-scoped SandboxTemplate every member uses. */
export const SandboxEnvTemplateRef = v.object({
  name: v.pipe(v.string(), v.description("Name of the SandboxTemplate (cluster-scoped).")),
  version: v.optional(
    v.pipe(
      v.string(),
      v.description("Pins a template version; empty follows the template's current version."),
    ),
  ),
});

/** SandboxEnvDefaults is the instance shape used when a sandbox create names none. */
export const SandboxEnvDefaults = v.object({
  instanceType: v.optional(
    v.pipe(v.string(), v.description("Entry of the InstanceType catalog; empty for migrated legacy pools.")),
  ),
  multiplier: v.optional(
    v.pipe(
      Int32,
      v.minValue(1),
      v.description("Scales the instance type's base resources, within its range."),
    ),
  ),
});

/** MemberMetadata is the labels/annotations snapshot the Env stamps onto a member pool. */
export const MemberMetadata = v.object({
  labels: v.optional(v.pipe(StringMap, v.description("The pool's labels after admission plugins ran."))),
  annotations: v.optional(
    v.pipe(StringMap, v.description("The pool's annotations after admission plugins ran.")),
  ),
});

/** EnvClusterMemberConfig is the caller's declared intent for a member; plugins never change it. */
export const EnvClusterMemberConfig = v.object({
  labels: v.optional(
    v.pipe(StringMap, v.description("Caller-supplied pool labels, applied before admission.")),
  ),
  annotations: v.optional(
    v.pipe(StringMap, v.description("Caller-supplied pool annotations, applied before admission.")),
  ),
  instanceType: v.optional(
    v.pipe(v.string(), v.description("Entry of the InstanceType catalog; wins over inlineResources.")),
  ),
  multiplier: v.optional(
    v.pipe(
      NonNegativeInt32,
      v.description("Scales the instance type's resources; required with instanceType."),
    ),
  ),
  inlineResources: v.optional(
    v.pipe(
      ResourceRequirements,
      v.description("Explicit per-Pod resources for pools without an instance type (migration path)."),
    ),
  ),
  scalingGroup: v.optional(
    v.pipe(
      v.string(),
      v.description(
        "Autoscaling group of the member; members of a group share resources. Empty: not autoscaled.",
      ),
    ),
    "default",
  ),
  minReplicas: v.optional(
    v.pipe(NonNegativeInt32, v.description("Floor of this member's replicas, enforced by the autoscaler.")),
  ),
  maxReplicas: v.optional(
    v.pipe(NonNegativeInt32, v.description("Ceiling of this member's replicas, enforced by the autoscaler.")),
  ),
  priority: v.optional(
    v.pipe(Int32, v.description("Routing and scaling preference, lower wins; default of the two below.")),
  ),
  scaleUpPriority: v.optional(
    v.pipe(Int32, v.description("Scale-up order within the group, lower first; falls back to priority.")),
  ),
  scaleDownPriority: v.optional(
    v.pipe(Int32, v.description("Scale-down order, higher shrinks first; falls back to priority.")),
  ),
});
export type EnvClusterMemberConfig = v.InferOutput<typeof EnvClusterMemberConfig>;

/** EnvClusterMember is one member SandboxPool of an Env. */
export const EnvClusterMember = v.object({
  name: v.pipe(
    v.string(),
    v.description("The member pool's metadata.name in the Env's namespace; the list key."),
  ),
  metadata: v.optional(
    v.pipe(
      MemberMetadata,
      v.description("Server-managed labels/annotations snapshot stamped onto the pool."),
    ),
  ),
  spec: v.optional(
    v.pipe(
      SandboxPoolSpec,
      v.description("Server-managed pool spec snapshot stamped verbatim onto the pool."),
    ),
  ),
  config: v.optional(
    v.pipe(EnvClusterMemberConfig, v.description("User-declared intent: sizing, scaling group, priorities.")),
  ),
});
export type EnvClusterMember = v.InferOutput<typeof EnvClusterMember>;

/** EnvClusterSpec is the segment of an Env owned by one cluster's worker. */
export const EnvClusterSpec = v.object({
  clusterID: v.pipe(v.string(), v.description("Cluster owning this segment; only its worker mutates it.")),
  members: v.optional(
    v.pipe(listMap(EnvClusterMember, "name"), v.description("Member pools in this cluster, keyed by name.")),
  ),
});
export type EnvClusterSpec = v.InferOutput<typeof EnvClusterSpec>;

/** EnvOverridesSpec replaces template fields uniformly for every member pool. */
export const EnvOverridesSpec = v.object({
  image: v.optional(v.pipe(v.string(), v.description("Replaces the main container (containers[0]) image."))),
  podCreationImagePolicy: v.optional(
    v.pipe(PodCreationImagePolicy, v.description("Replaces the pools' podCreationImagePolicy.")),
  ),
  defaultStartupTimeout: v.optional(
    v.pipe(Duration, v.description("Replaces the pools' defaultStartupTimeout.")),
  ),
  defaultIdleTimeout: v.optional(v.pipe(Duration, v.description("Replaces the pools' defaultIdleTimeout."))),
});
export type EnvOverridesSpec = v.InferOutput<typeof EnvOverridesSpec>;

/** SandboxEnvSpec is the desired state of an Env. */
export const SandboxEnvSpec = v.pipe(
  v.object({
    templateRef: v.pipe(
      SandboxEnvTemplateRef,
      v.description("The one SandboxTemplate every member pool must reference."),
    ),
    mode: v.optional(
      v.pipe(
        requiredWithDefault(SandboxEnvMode),
        v.description("WarmPool (member pools) or OnDemandJob (a job per request, not implemented)."),
      ),
      "WarmPool",
    ),
    defaults: v.optional(
      v.pipe(SandboxEnvDefaults, v.description("Instance shape for creates that name none; recommended.")),
    ),
    clusters: v.optional(
      v.pipe(
        listMap(EnvClusterSpec, "clusterID"),
        v.description("Per-cluster member lists; each segment belongs to the worker of that cluster."),
      ),
    ),
    autoscaling: v.optional(
      v.pipe(EnvAutoscalingSpec, v.description("Env-level autoscaler; unset means manual replicas.")),
    ),
    overrides: v.optional(
      v.pipe(EnvOverridesSpec, v.description("Template fields replaced for every member pool.")),
    ),
  }),
  v.description("Desired state of the SandboxEnv."),
);
export type SandboxEnvSpec = v.InferOutput<typeof SandboxEnvSpec>;
export type SandboxEnvSpecInput = v.InferInput<typeof SandboxEnvSpec>;

/** SandboxEnv is a namespaced sandbox runtime class served by member pools across clusters. */
export const SandboxEnv = v.pipe(
  kindObject(KIND.SANDBOX_ENV, SandboxEnvSpec, SandboxEnvStatus),
  v.description("SandboxEnv is one class of sandbox runtime served by member SandboxPools across clusters."),
);
export type SandboxEnv = v.InferOutput<typeof SandboxEnv>;
export type SandboxEnvInput = v.InferInput<typeof SandboxEnv>;

/** SandboxEnvList is a list of SandboxEnvs as the apiserver returns it. */
export const SandboxEnvList = listObject("SandboxEnvList", SandboxEnv);
export type SandboxEnvList = v.InferOutput<typeof SandboxEnvList>;
