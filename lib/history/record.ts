// The terminal history record of one sandbox: what the history store keeps after the pod has been
// reset to idle or deleted. One record per sandbox ID, written exactly once.
import * as v from "valibot";
import { STOP_REASON } from "../crd/keys.ts";

/** SandboxRecord is a finished sandbox: identity, owner, timing, content, resources and outcome. */
export const SandboxRecord = v.object({
  sandboxId: v.pipe(v.string(), v.minLength(1)),
  namespace: v.string(),
  poolName: v.string(),
  podName: v.string(),
  team: v.optional(v.string()),
  user: v.optional(v.string()),
  /** RFC 3339 times; claimedAt from the claimed-at annotation, startedAt from started-at. */
  claimedAt: v.optional(v.string()),
  startedAt: v.optional(v.string()),
  terminatedAt: v.string(),
  /** Container name → image that ran (the running-images snapshot when present). */
  containerImages: v.record(v.string(), v.string()),
  /** The caller's sandbox metadata (parsed from the sandbox-metadata annotation). */
  metadata: v.record(v.string(), v.string()),
  /** Summed over containers: requests, else limits; CPU in millicores, memory in bytes. */
  cpuMillis: v.number(),
  memoryBytes: v.number(),
  stopReason: v.picklist([
    STOP_REASON.COMPLETED,
    STOP_REASON.CANCELED,
    STOP_REASON.RELEASED,
    STOP_REASON.FAILED,
  ]),
  failureReason: v.optional(v.string()),
  failureMessage: v.optional(v.string()),
  exitCode: v.optional(v.number()),
  containerId: v.optional(v.string()),
});
export type SandboxRecord = v.InferOutput<typeof SandboxRecord>;
