// Which Warning events explain a sandbox. A pooled pod keeps its name and uid from one sandbox to
// the next, so the pod's events are only the sandbox's from its claim on; the API's GET and the
// console both show them by this one rule.
import type { CoreV1Event, V1Pod } from "@kubernetes/client-node";
import type { SandboxStatusDetail } from "../crd/annotations.ts";
import { CLAIMED_AT_ANNOTATION } from "../crd/keys.ts";
import { type SandboxStatusDetailWithEvents, withWarningEvents } from "../lifecycle/diagnostics.ts";
import { parseTime } from "../util/time.ts";

/**
 * warningEventSelector is the field selector of a pod's Warning events (list them in the pod's
 * namespace): one read of exactly the events that may explain it.
 */
export function warningEventSelector(pod: V1Pod): string {
  return `involvedObject.name=${pod.metadata?.name ?? ""},type=Warning`;
}

/**
 * sandboxWarningEvents attaches to a sandbox's diagnosis the Warning events of its pod since the
 * sandbox's claim (the claimed-at annotation; without one, all of the pod's), newest first
 * (withWarningEvents): events of an earlier sandbox of the same pod never explain this one.
 */
export function sandboxWarningEvents(
  detail: SandboxStatusDetail,
  pod: V1Pod,
  events: readonly CoreV1Event[],
): SandboxStatusDetailWithEvents {
  const claimedAt = parseTime(pod.metadata?.annotations?.[CLAIMED_AT_ANNOTATION]);
  return withWarningEvents(detail, pod, events, claimedAt);
}
