// JSON shapes stored in Pod annotations (not in any CRD): the in-place image update state and
// the sandbox status diagnostic. Loose objects, so a read-modify-write keeps fields written by
// newer components.
import * as v from "valibot";
import { INPLACE_UPDATE_PHASE } from "./keys.ts";
import { Int32, StringMap, Time } from "./scalars.ts";

/**
 * SandboxStatusDetail is the diagnostic the reconciler writes under
 * SANDBOX_STATUS_DETAIL_ANNOTATION, so the API can explain a Starting or Failed sandbox.
 */
export const SandboxStatusDetail = v.looseObject({
  /** reason is a machine-readable cause, e.g. Pulling, ImagePullBackOff, CrashLoopBackOff, OOMKilled. */
  reason: v.string(),
  /** message is a human-readable description of the current state. */
  message: v.string(),
  /** lastUpdatedTime is when the record was last written (RFC 3339). */
  lastUpdatedTime: v.string(),
});
export type SandboxStatusDetail = v.InferOutput<typeof SandboxStatusDetail>;

/** InplaceUpdateContainerStatus is a container's identity when an in-place update was triggered. */
export const InplaceUpdateContainerStatus = v.looseObject({
  imageID: v.optional(v.string()),
  /** containerID proves the container was replaced even when the target digest is unchanged. */
  containerID: v.optional(v.string()),
});

/** StableContainerStatus is a container's identity after an update completed, to spot restarts. */
export const StableContainerStatus = v.looseObject({
  containerID: v.optional(v.string()),
  restartCount: Int32,
});

/**
 * InplaceUpdateState is the in-flight image swap of a Pod, stored as JSON under
 * INPLACE_UPDATE_STATE_ANNOTATION so any replica of the control plane can finish it.
 */
export const InplaceUpdateState = v.looseObject({
  phase: v.picklist([
    INPLACE_UPDATE_PHASE.STARTING,
    INPLACE_UPDATE_PHASE.STOPPING,
    INPLACE_UPDATE_PHASE.COMPLETED,
  ]),
  targetImage: v.optional(v.string()),
  targetImages: v.optional(StringMap),
  targetPodPhase: v.optional(v.string()),
  // Go writes a zero metav1.Time as null (omitempty does not omit structs).
  updateTimestamp: v.nullish(Time),
  lastContainerStatuses: v.optional(v.record(v.string(), InplaceUpdateContainerStatus)),
  /** stableContainerStatuses is set on completion towards running, to detect unexpected restarts. */
  stableContainerStatuses: v.optional(v.record(v.string(), StableContainerStatus)),
});
export type InplaceUpdateState = v.InferOutput<typeof InplaceUpdateState>;
