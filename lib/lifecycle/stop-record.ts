// The history record of a sandbox is captured while its pod is stopping: the release wrote the
// stop metadata and a snapshot of the images that ran, and the return to idle will erase both.
// Reading is tolerant throughout: a malformed annotation degrades one field, never the record.
import type { V1Container, V1Pod } from "@kubernetes/client-node";
import {
  CLAIMED_AT_ANNOTATION,
  CONTAINER_ID_ANNOTATION,
  EXIT_CODE_ANNOTATION,
  FAILURE_MESSAGE_ANNOTATION,
  FAILURE_REASON_ANNOTATION,
  RUNNING_IMAGES_ANNOTATION,
  SANDBOX_METADATA_ANNOTATION,
  SANDBOX_POOL_LABEL,
  STARTED_AT_ANNOTATION,
  STOP_REASON,
  STOP_REASON_ANNOTATION,
  TEAM_LABEL,
  TERMINATED_AT_ANNOTATION,
  USER_LABEL,
} from "../crd/keys.ts";
import type { SandboxRecord } from "../history/record.ts";
import { rfc3339 } from "../util/time.ts";
import { sandboxIdOf } from "./api-phase.ts";
import { parseQuantity, quantityMilliValue, quantityValue } from "./quantity.ts";
import { runtimeContainerId } from "./release-intent.ts";

const STOP_REASONS = new Set<string>(Object.values(STOP_REASON));

/** stringMap parses a JSON object annotation and keeps its string values; else undefined. */
function stringMap(raw: string | undefined): Record<string, string> | undefined {
  if (!raw) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined;
    return Object.fromEntries(
      Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === "string"),
    );
  } catch {
    return undefined;
  }
}

/**
 * sumResource adds one resource over the containers, each container counting its request, else
 * its limit (Kubernetes defaults a missing request to the limit); unparsable values count 0.
 */
function sumResource(containers: readonly V1Container[], resource: string, milli: boolean): number {
  let total = 0;
  for (const c of containers) {
    const text = c.resources?.requests?.[resource] ?? c.resources?.limits?.[resource];
    const q = text === undefined ? undefined : parseQuantity(String(text));
    if (q) total += milli ? quantityMilliValue(q) : quantityValue(q);
  }
  return total;
}

/**
 * captureStopRecord builds the terminal SandboxRecord of a stopping pod (agentbox's
 * CaptureSandboxStopRecord over SandboxBaseFromPod). Call it before completeStoppingIntent. The
 * sandbox id comes from the annotation, else the label; a pod with neither was never claimed and
 * has no record (undefined). Images come from the running-images snapshot, else the pod spec;
 * metadata from the sandbox-metadata JSON ({} when malformed); CPU millicores and memory bytes
 * are summed over containers from requests, else limits. The stop reason is the annotation when
 * it is a known reason, else Canceled if the sandbox never started running, else Completed;
 * terminatedAt is the annotation, else `now`.
 */
export function captureStopRecord(pod: V1Pod, now: Date): SandboxRecord | undefined {
  const labels = pod.metadata?.labels ?? {};
  const annotations = pod.metadata?.annotations ?? {};
  const sandboxId = sandboxIdOf(pod);
  if (!sandboxId) return undefined;
  const containers = pod.spec?.containers ?? [];
  const snapshot = stringMap(annotations[RUNNING_IMAGES_ANNOTATION]);
  const containerImages =
    snapshot && Object.keys(snapshot).length > 0
      ? snapshot
      : Object.fromEntries(containers.map((c) => [c.name, c.image ?? ""]));
  const startedAt = annotations[STARTED_AT_ANNOTATION] || undefined;
  const annotated = annotations[STOP_REASON_ANNOTATION] ?? "";
  // A pause is not the sandbox's end: its record is written when it ends (kill, expiry).
  if (annotated === STOP_REASON.PAUSED) return undefined;
  const stopReason: SandboxRecord["stopReason"] = STOP_REASONS.has(annotated)
    ? (annotated as SandboxRecord["stopReason"])
    : startedAt
      ? STOP_REASON.COMPLETED
      : STOP_REASON.CANCELED;
  const exitText = annotations[EXIT_CODE_ANNOTATION]?.trim() ?? "";
  const exitCode = /^[+-]?\d{1,10}$/.test(exitText) ? Number(exitText) : undefined;
  const containerId = annotations[CONTAINER_ID_ANNOTATION] || runtimeContainerId(pod, false);
  const optional = (key: string, value: string | undefined) => (value ? { [key]: value } : {});
  return {
    sandboxId,
    namespace: pod.metadata?.namespace ?? "",
    poolName: labels[SANDBOX_POOL_LABEL] ?? "",
    podName: pod.metadata?.name ?? "",
    ...optional("team", labels[TEAM_LABEL]),
    ...optional("user", labels[USER_LABEL]),
    ...optional("claimedAt", annotations[CLAIMED_AT_ANNOTATION]),
    ...optional("startedAt", startedAt),
    terminatedAt: annotations[TERMINATED_AT_ANNOTATION] || rfc3339(now),
    containerImages,
    metadata: stringMap(annotations[SANDBOX_METADATA_ANNOTATION]) ?? {},
    cpuMillis: sumResource(containers, "cpu", true),
    memoryBytes: sumResource(containers, "memory", false),
    stopReason,
    ...optional("failureReason", annotations[FAILURE_REASON_ANNOTATION]),
    ...optional("failureMessage", annotations[FAILURE_MESSAGE_ANNOTATION]),
    ...(exitCode !== undefined ? { exitCode } : {}),
    ...optional("containerId", containerId),
  };
}
