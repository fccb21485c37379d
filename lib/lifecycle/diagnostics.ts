// Why is a sandbox not running? Users ask while it is starting or after it failed, and the answer
// is mostly in the pod itself (container states), with Warning events as supporting detail.
// Both are turned into the SandboxStatusDetail shape agentbox's API and dashboard already show.
import type { CoreV1Event, V1ContainerStatus, V1Pod } from "@kubernetes/client-node";
import type { SandboxStatusDetail } from "../crd/annotations.ts";
import { SANDBOX_PHASE, SANDBOX_STATUS_DETAIL_ANNOTATION } from "../crd/keys.ts";
import { parseTime, rfc3339 } from "../util/time.ts";
import { targetImagesOf } from "./completion.ts";
import { readInplaceState } from "./inplace-state.ts";
import { sandboxPhaseOf } from "./phase-label.ts";

/** PodDiagnosticEvent is one Warning event of the pod, as the sandbox API returns it. */
export interface PodDiagnosticEvent {
  reason: string;
  message: string;
  /** RFC 3339 time of the latest occurrence ("" when the event carries no time). */
  lastTimestamp: string;
  count: number;
}

/** SandboxStatusDetailWithEvents is a status detail with the pod's Warning events, newest first. */
export type SandboxStatusDetailWithEvents = SandboxStatusDetail & { events: PodDiagnosticEvent[] };

type Diagnosis = { reason: string; message: string };

const PULL_ERRORS = new Set(["ErrImagePull", "ImagePullBackOff"]);
const CREATING = new Set(["", "ContainerCreating", "PodInitializing"]);

/** orderedStatuses lists container statuses in spec order (the sandbox's main container first). */
function orderedStatuses(pod: V1Pod): V1ContainerStatus[] {
  const statuses = pod.status?.containerStatuses ?? [];
  const order = (pod.spec?.containers ?? []).map((c) => c.name);
  const rank = (s: V1ContainerStatus) => (order.includes(s.name) ? order.indexOf(s.name) : order.length);
  return [...statuses].sort((a, b) => rank(a) - rank(b));
}

function waiting(statuses: V1ContainerStatus[], accept: (reason: string) => boolean): Diagnosis | undefined {
  for (const s of statuses) {
    const reason = s.state?.waiting?.reason ?? "";
    if (s.state?.waiting && accept(reason))
      return {
        reason,
        message: s.state.waiting.message || `container ${JSON.stringify(s.name)} is waiting: ${reason}`,
      };
  }
  return undefined;
}

function oomKilled(statuses: V1ContainerStatus[]): Diagnosis | undefined {
  for (const s of statuses) {
    const t =
      s.state?.terminated?.reason === "OOMKilled"
        ? s.state.terminated
        : !s.state?.running && s.lastState?.terminated?.reason === "OOMKilled"
          ? s.lastState.terminated
          : undefined;
    if (t)
      return {
        reason: "OOMKilled",
        message: t.message || `container ${JSON.stringify(s.name)} was OOM-killed (exit code ${t.exitCode})`,
      };
  }
  return undefined;
}

function abnormalExit(statuses: V1ContainerStatus[]): Diagnosis | undefined {
  for (const s of statuses) {
    const t = s.state?.terminated ?? s.lastState?.terminated;
    if (t && t.exitCode !== 0)
      return {
        reason: t.reason || "Error",
        message: t.message || `container ${JSON.stringify(s.name)} exited with code ${t.exitCode}`,
      };
  }
  return undefined;
}

/** recordedPullError is the pull error the pod's status-detail annotation holds, if it holds one. */
function recordedPullError(pod: V1Pod): Diagnosis | undefined {
  try {
    const raw = pod.metadata?.annotations?.[SANDBOX_STATUS_DETAIL_ANNOTATION];
    const d: unknown = raw ? JSON.parse(raw) : undefined;
    if (typeof d !== "object" || d === null) return undefined;
    const { reason, message } = d as { reason?: unknown; message?: unknown };
    return typeof reason === "string" && PULL_ERRORS.has(reason) && typeof message === "string"
      ? { reason, message }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * startBackOff explains a CrashLoopBackOff of a starting sandbox whose container never ran since
 * the swap: its last termination is still the container the swap stopped. A real kubelet backs
 * off every restart of a container after its first, whatever stopped it, so a swapped-in image
 * that cannot be pulled shows ErrImagePull, ImagePullBackOff, then "back-off 10s restarting
 * failed container" (CrashLoopBackOff) in turn, though nothing crashed. The pull error recorded
 * on the pod is then still the answer; without one, undefined (the back-off is all there is).
 */
function startBackOff(pod: V1Pod, statuses: V1ContainerStatus[]): Diagnosis | undefined {
  const { state } = readInplaceState(pod);
  const stalled = statuses.some((s) => {
    const before = state?.lastContainerStatuses?.[s.name]?.containerID;
    const last = s.lastState?.terminated?.containerID ?? s.containerID;
    return s.state?.waiting?.reason === "CrashLoopBackOff" && before !== undefined && last === before;
  });
  return stalled ? recordedPullError(pod) : undefined;
}

function podFailed(pod: V1Pod): Diagnosis | undefined {
  if (pod.status?.phase !== "Failed") return undefined;
  const message = [pod.status.reason, pod.status.message].filter(Boolean).join(": ");
  return { reason: "PodFailed", message: message || "pod failed" };
}

function pulling(pod: V1Pod): Diagnosis {
  const { state } = readInplaceState(pod);
  const target = state ? Object.values(targetImagesOf(pod, state))[0] : undefined;
  return { reason: "Pulling", message: `Pulling image: ${target ?? pod.spec?.containers?.[0]?.image ?? ""}` };
}

/**
 * buildStatusDetail explains a starting or failed sandbox from the pod alone (no events, no
 * API calls); other phases, and a failed pod with nothing to show, give undefined. In priority
 * order: OOMKilled (terminated, or last terminated while not running), ErrImagePull /
 * ImagePullBackOff (also while the kubelet backs off restarting a starting container that never
 * ran, once the pod records a pull error: startBackOff), CrashLoopBackOff, any other waiting
 * reason (CreateContainerConfigError…), PodFailed (pod phase Failed; message "Evicted: …"), a
 * non-zero exit (failed pods); and for a starting pod with none of these, Pulling with the
 * target image.
 */
export function buildStatusDetail(pod: V1Pod, now: Date): SandboxStatusDetail | undefined {
  const phase = sandboxPhaseOf(pod);
  if (phase !== SANDBOX_PHASE.STARTING && phase !== SANDBOX_PHASE.FAILED) return undefined;
  const statuses = orderedStatuses(pod);
  const diagnosis =
    oomKilled(statuses) ??
    waiting(statuses, (r) => PULL_ERRORS.has(r)) ??
    (phase === SANDBOX_PHASE.STARTING ? startBackOff(pod, statuses) : undefined) ??
    waiting(statuses, (r) => r === "CrashLoopBackOff") ??
    waiting(statuses, (r) => !CREATING.has(r)) ??
    podFailed(pod) ??
    (phase === SANDBOX_PHASE.FAILED ? abnormalExit(statuses) : pulling(pod));
  return diagnosis && { ...diagnosis, lastUpdatedTime: rfc3339(now) };
}

function eventTime(event: CoreV1Event): Date | undefined {
  return (
    parseTime(event.lastTimestamp) ??
    parseTime(event.series?.lastObservedTime) ??
    parseTime(event.eventTime) ??
    parseTime(event.firstTimestamp) ??
    parseTime(event.metadata?.creationTimestamp)
  );
}

/**
 * withWarningEvents attaches the pod's Warning events to a detail, newest first. Only events
 * about this pod count: involvedObject kind Pod, same name and namespace, and same uid when both
 * sides have one (a deleted pod's events outlive it under the same name); with `since` (the
 * sandbox's claim), only events last seen since then, as a pooled pod keeps its name and uid
 * from one sandbox to the next.
 */
export function withWarningEvents(
  detail: SandboxStatusDetail,
  pod: V1Pod,
  events: readonly CoreV1Event[],
  since?: Date,
): SandboxStatusDetailWithEvents {
  const { name, namespace, uid } = pod.metadata ?? {};
  const mine = events.filter((e) => {
    const ref = e.involvedObject;
    if (e.type !== "Warning" || !ref || (ref.kind && ref.kind !== "Pod") || ref.name !== name) return false;
    const eventNamespace = ref.namespace ?? e.metadata?.namespace;
    if (namespace && eventNamespace && eventNamespace !== namespace) return false;
    return !(uid && ref.uid && ref.uid !== uid);
  });
  const timed = mine
    .map((e) => ({ e, ms: eventTime(e)?.getTime() }))
    .filter(({ ms }) => since === undefined || ms === undefined || ms >= since.getTime());
  // Newest first; events without any time last, keeping their order.
  timed.sort((a, b) => (a.ms === b.ms ? 0 : a.ms === undefined ? 1 : b.ms === undefined ? -1 : b.ms - a.ms));
  return {
    ...detail,
    events: timed.map(({ e, ms }) => ({
      reason: e.reason ?? "",
      message: e.message ?? "",
      lastTimestamp: ms === undefined ? "" : rfc3339(new Date(ms)),
      count: e.count ?? e.series?.count ?? 1,
    })),
  };
}
