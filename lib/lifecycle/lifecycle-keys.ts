// Which labels and annotations belong to one sandbox's life on a pooled pod. A claim writes them,
// a release adds the stop metadata, and the return to idle must remove all of them so the next
// sandbox on the same pod inherits nothing (not even the previous user's team label).
import {
  CLAIMED_AT_ANNOTATION,
  CLAIMED_BY_LABEL,
  CONTAINER_ID_ANNOTATION,
  EGRESS_LABEL,
  END_AT_ANNOTATION,
  EXIT_CODE_ANNOTATION,
  FAILURE_MESSAGE_ANNOTATION,
  FAILURE_REASON_ANNOTATION,
  IDLE_TIMEOUT_ANNOTATION,
  INCARNATION_ANNOTATION,
  LAST_ACTIVE_ANNOTATION,
  LIFETIME_ANNOTATION,
  MANAGED_ANNOTATION_KEYS_ANNOTATION,
  MANAGED_BY_LABEL,
  MANAGED_LABEL_KEYS_ANNOTATION,
  NETWORK_ANNOTATION,
  ON_TIMEOUT_ANNOTATION,
  PAUSING_ANNOTATION,
  POST_START_HOOKS_ANNOTATION,
  REPLACE_ON_RESET_ANNOTATION,
  RESUME_ATTEMPT_ANNOTATION,
  RUNNING_IMAGES_ANNOTATION,
  SANDBOX_ID_ANNOTATION,
  SANDBOX_ID_LABEL,
  SANDBOX_METADATA_ANNOTATION,
  SANDBOX_STATUS_DETAIL_ANNOTATION,
  SEALED_ENV_VARS_ANNOTATION,
  STARTED_AT_ANNOTATION,
  STARTUP_TIMEOUT_ANNOTATION,
  STOP_REASON_ANNOTATION,
  TEAM_LABEL,
  TERMINATED_AT_ANNOTATION,
  TRAFFIC_ANNOTATION,
  USER_LABEL,
  WAITER_UNTIL_ANNOTATION,
} from "../crd/keys.ts";

/**
 * SANDBOX_LABELS are the labels a claim writes besides the phase and the caller's own
 * (managed-label-keys); all are removed when the pod returns to idle (claimed-by included, so a
 * pod released by a host that did not remove it yet is idle without it; ADR 0037).
 */
export const SANDBOX_LABELS: readonly string[] = [
  SANDBOX_ID_LABEL,
  MANAGED_BY_LABEL,
  TEAM_LABEL,
  USER_LABEL,
  CLAIMED_BY_LABEL,
  EGRESS_LABEL,
];

/**
 * SANDBOX_ANNOTATIONS are the per-sandbox annotations written by claim, start, activity
 * tracking, diagnostics and release; all are removed when the pod returns to idle.
 */
export const SANDBOX_ANNOTATIONS: readonly string[] = [
  SANDBOX_ID_ANNOTATION,
  CLAIMED_AT_ANNOTATION,
  STARTED_AT_ANNOTATION,
  WAITER_UNTIL_ANNOTATION,
  IDLE_TIMEOUT_ANNOTATION,
  STARTUP_TIMEOUT_ANNOTATION,
  END_AT_ANNOTATION,
  LIFETIME_ANNOTATION,
  LAST_ACTIVE_ANNOTATION,
  SANDBOX_METADATA_ANNOTATION,
  POST_START_HOOKS_ANNOTATION,
  MANAGED_LABEL_KEYS_ANNOTATION,
  MANAGED_ANNOTATION_KEYS_ANNOTATION,
  STOP_REASON_ANNOTATION,
  TERMINATED_AT_ANNOTATION,
  FAILURE_REASON_ANNOTATION,
  FAILURE_MESSAGE_ANNOTATION,
  EXIT_CODE_ANNOTATION,
  RUNNING_IMAGES_ANNOTATION,
  CONTAINER_ID_ANNOTATION,
  SANDBOX_STATUS_DETAIL_ANNOTATION,
  REPLACE_ON_RESET_ANNOTATION,
  NETWORK_ANNOTATION,
  TRAFFIC_ANNOTATION,
  SEALED_ENV_VARS_ANNOTATION,
  INCARNATION_ANNOTATION,
  RESUME_ATTEMPT_ANNOTATION,
  ON_TIMEOUT_ANNOTATION,
  PAUSING_ANNOTATION,
];

/**
 * RESERVED_KEY_PREFIX marks keys owned by the control plane (pool, phase, state...). A caller's
 * own labels and annotations may not use it, so a claim can never overwrite them and a release
 * can never remove them.
 */
export const RESERVED_KEY_PREFIX = "agentbox.navix.sh/";

/**
 * managedKeys reads a managed-label-keys / managed-annotation-keys annotation: a JSON array of
 * keys, as agentbox writes it. Anything unreadable, and any reserved key, is ignored.
 */
export function managedKeys(
  pod: { metadata?: { annotations?: Record<string, string> | undefined } | undefined },
  annotation: string,
): string[] {
  const raw = pod.metadata?.annotations?.[annotation];
  if (!raw) return [];
  try {
    const parsed: unknown = JSON.parse(raw);
    if (!Array.isArray(parsed)) return [];
    return parsed.filter((k): k is string => typeof k === "string" && k !== "" && !isReservedKey(k));
  } catch {
    return [];
  }
}

/** isReservedKey tells whether a label or annotation key belongs to the control plane. */
export function isReservedKey(key: string): boolean {
  return key.startsWith(RESERVED_KEY_PREFIX);
}

/** unique drops duplicates and empty strings, keeping first occurrences in order. */
export function unique(keys: Iterable<string>): string[] {
  return [...new Set(keys)].filter((k) => k !== "");
}
