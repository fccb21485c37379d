// SandboxPool (namespaced): a warm pool of identical sandbox Pods. Pods idle on a small image
// and are swapped in place to the sandbox image when claimed, then reset when released.
import * as v from "valibot";
import { PoolAutoScalingStatus } from "./autoscaling.ts";
import {
  Conditions,
  Duration,
  Int32,
  IntOrString,
  kindObject,
  LabelSelector,
  listObject,
  NonNegativeInt32,
  StringMap,
} from "./common.ts";
import { KIND } from "./keys.ts";
import { embeddedTemplateEntries } from "./sandbox-template.ts";

/** PodCreationImagePolicy is which image a newly created Pod starts with. */
export const PodCreationImagePolicy = v.picklist(["PoolDefaultImage", "IdleImage"]);
export type PodCreationImagePolicy = v.InferOutput<typeof PodCreationImagePolicy>;

/** SandboxPoolPhase is the high-level state of a pool. */
export const SandboxPoolPhase = v.picklist([
  "Pending",
  "Ready",
  "ScalingUp",
  "ScalingDown",
  "Degraded",
  "Terminating",
]);
export type SandboxPoolPhase = v.InferOutput<typeof SandboxPoolPhase>;

/** DEFAULT_MAX_SURGE is rollout.maxSurge when a pool gives none (the CRD's default too). */
export const DEFAULT_MAX_SURGE = "25%";

/**
 * PoolRolloutSpec is how a pool replaces pods of an older pod revision (ADR 0031). It carries its
 * CRD default as schema metadata rather than a valibot default, so that pools built in code need
 * not spell it out; code reads a missing value as DEFAULT_MAX_SURGE.
 */
export const PoolRolloutSpec = v.pipe(
  v.object({
    maxSurge: v.optional(
      v.pipe(
        IntOrString,
        v.description(
          'Pods the pool may run beyond replicas while it replaces outdated pods: a count (at least 1) or a percentage of replicas rounded up (at least 1 pod), e.g. "25%".',
        ),
      ),
      DEFAULT_MAX_SURGE,
    ),
  }),
  v.description(
    "Rollout of a changed pod template: new pods first (up to maxSurge extra), an outdated idle pod deleted only while the claimable idle pods stay at least what the pool holds at rest, sandboxes never touched (their pods are replaced once released).",
  ),
  v.metadata({ default: {} }),
);
export type PoolRolloutSpec = v.InferOutput<typeof PoolRolloutSpec>;

/**
 * SandboxPoolSpec is the desired state of a pool. It is also the member snapshot an Env stamps
 * onto its live pools (SandboxEnv spec.clusters[].members[].spec).
 */
export const SandboxPoolSpec = v.pipe(
  v.object({
    replicas: v.pipe(
      NonNegativeInt32,
      v.description(
        "Desired total Pods (idle + starting + running + stopping); set by the Env autoscaler or by hand.",
      ),
    ),
    templateName: v.optional(
      v.pipe(
        v.string(),
        v.description("SandboxTemplate copied at creation; inline fields here override the template's."),
      ),
    ),
    defaultStartupTimeout: v.optional(
      v.pipe(
        Duration,
        v.description(
          "Startup timeout for creates that give none, and the upper bound of the Starting phase; unset: no bound (creates use 2m).",
        ),
      ),
    ),
    defaultIdleTimeout: v.optional(
      v.pipe(
        Duration,
        v.description("Idle timeout for sandboxes created without one; unset: run until released."),
      ),
    ),
    podCreationImagePolicy: v.optional(
      v.pipe(
        PodCreationImagePolicy,
        v.description(
          "Image of newly created Pods: PoolDefaultImage keeps the template image, IdleImage uses spec.idleImage.",
        ),
      ),
      "IdleImage",
    ),
    rollout: v.optional(PoolRolloutSpec),
    ...embeddedTemplateEntries,
  }),
  v.description("Desired state of the SandboxPool."),
);
export type SandboxPoolSpec = v.InferOutput<typeof SandboxPoolSpec>;
export type SandboxPoolSpecInput = v.InferInput<typeof SandboxPoolSpec>;

/** count is an optional Int32 replica counter of the pool status. */
function count(description: string) {
  return v.optional(v.pipe(Int32, v.description(description)));
}

/** SandboxPoolStatus is the observed state of a pool; the pool reconciler writes it. */
export const SandboxPoolStatus = v.pipe(
  v.object({
    phase: v.optional(
      v.pipe(
        SandboxPoolPhase,
        v.description(
          "Summary, first match wins: Terminating, Pending (0 replicas, no Pods), ScalingUp, ScalingDown, Degraded, Ready.",
        ),
      ),
    ),
    idleReplicas: count("Pods in the idle phase."),
    unavailableIdleReplicas: count(
      "Idle Pods whose Ready condition is not True; counted in idleReplicas, they cannot take requests.",
    ),
    runningReplicas: count("Pods in the running phase."),
    startingReplicas: count("Pods being activated (idle → running)."),
    stoppingReplicas: count("Pods being recycled (running → idle)."),
    failedReplicas: count("Pods in the failed phase."),
    pendingRequests: count("Throttled mirror of the claim queue depth, for the dashboard."),
    updatedReplicas: count("Pods at the pool's current pod revision (updateRevision)."),
    outdatedReplicas: count(
      "Pods of an older pod revision: idle ones are replaced surge-first, busy ones once released.",
    ),
    updateRevision: v.optional(
      v.pipe(
        v.string(),
        v.description(
          "Pod revision new pods are rendered at (label agentbox.navix.sh/pod-revision on each pod).",
        ),
      ),
    ),
    currentRevision: v.optional(
      v.pipe(
        v.string(),
        v.description("Pod revision every pod was at when the pool last had no outdated pods."),
      ),
    ),
    selector: v.optional(
      v.pipe(
        v.string(),
        v.description(
          "Label selector string of the pool's Pods; kept for the scale subresource (kubectl scale, HPA).",
        ),
      ),
    ),
    labelSelector: v.optional(
      v.pipe(LabelSelector, v.description("Structured label selector matching all Pods of the pool.")),
    ),
    phaseSelectors: v.optional(
      v.pipe(
        StringMap,
        v.description(
          "Selector strings per phase (all, idle, running, starting, stopping, failed), for kubectl -l.",
        ),
      ),
    ),
    conditions: v.optional(
      v.pipe(
        Conditions,
        v.description(
          "Current state of the pool: Available, Scaling, Degraded, Progressing, ReplicaFailure, TemplateAvailable.",
        ),
      ),
    ),
    autoscaling: v.optional(
      v.pipe(
        PoolAutoScalingStatus,
        v.description("Autoscaler bookkeeping; absent when the owning Env group is not autoscaled."),
      ),
    ),
  }),
  v.description("Observed state of the SandboxPool."),
);
export type SandboxPoolStatus = v.InferOutput<typeof SandboxPoolStatus>;

/** SandboxPool is a namespaced warm pool of sandbox Pods. */
export const SandboxPool = v.pipe(
  kindObject(KIND.SANDBOX_POOL, SandboxPoolSpec, SandboxPoolStatus),
  v.description("SandboxPool is a warm pool of identical sandbox Pods, claimed and recycled in place."),
);
export type SandboxPool = v.InferOutput<typeof SandboxPool>;
export type SandboxPoolInput = v.InferInput<typeof SandboxPool>;

/** SandboxPoolList is a list of SandboxPools as the apiserver returns it. */
export const SandboxPoolList = listObject("SandboxPoolList", SandboxPool);
export type SandboxPoolList = v.InferOutput<typeof SandboxPoolList>;
