import type { V1Pod } from "@kubernetes/client-node";
import {
  CLAIMED_AT_ANNOTATION,
  IDLE_TIMEOUT_ANNOTATION,
  LAST_ACTIVE_ANNOTATION,
  SANDBOX_ID_LABEL,
  SANDBOX_PHASE,
  STARTED_AT_ANNOTATION,
  STOP_REASON,
} from "../crd/keys.ts";
import { type Action, isTerminating, podTarget, testVersion } from "../kube/action.ts";
import { escapePointer, type JsonPatchOp } from "../kube/json-patch.ts";
import { activityThrottleSeconds, shouldRecordActivity } from "../lifecycle/activity-throttle.ts";
import { toJsonPatch } from "../lifecycle/intent-patch.ts";
import { sandboxPhaseOf } from "../lifecycle/phase-label.ts";
import { type ResetSource, releaseIntent, resetFrom } from "../lifecycle/release-intent.ts";
import { parseTime, rfc3339 } from "../util/time.ts";

/** lastActiveOf is the latest sign of life: the last-active annotation, else started, else claimed. */
export function lastActiveOf(pod: V1Pod): Date | undefined {
  const a = pod.metadata?.annotations ?? {};
  const times = [a[LAST_ACTIVE_ANNOTATION], a[STARTED_AT_ANNOTATION], a[CLAIMED_AT_ANNOTATION]]
    .map(parseTime)
    .filter((t): t is Date => t !== undefined);
  return times.length ? new Date(Math.max(...times.map((t) => t.getTime()))) : undefined;
}

/**
 * IdleReleaseMode says what counts as a sandbox's activity for its idle timeout:
 * - pulled: the pulled activity source (authoritative: a sandbox it does not report has been idle
 *   since its start) and the last-active annotation;
 * - reported: only activity reported through POST /v1/activity (a last-active annotation later
 *   than the start, which sets it); a sandbox nobody reported on since its start has no activity
 *   signal and is never released for idleness (upstream: without a last-active source the
 *   reconciler idles);
 * - since-start: the last-active annotation, else the start (or claim) time: idle timeouts act
 *   without any activity source;
 * - off: no idle releases.
 */
export const IDLE_RELEASE_MODES = ["pulled", "reported", "since-start", "off"] as const;
export type IdleReleaseMode = (typeof IDLE_RELEASE_MODES)[number];

/** hasReportedActivity: the sandbox's last-active is later than its start (which writes it). */
function hasReportedActivity(pod: V1Pod): boolean {
  const a = pod.metadata?.annotations ?? {};
  const last = parseTime(a[LAST_ACTIVE_ANNOTATION]);
  const start = parseTime(a[STARTED_AT_ANNOTATION]) ?? parseTime(a[CLAIMED_AT_ANNOTATION]);
  return last !== undefined && (start === undefined || last > start);
}

/**
 * idleReleaseMode resolves a host's configured mode (`setting`, validated by the host's schema)
 * against whether it has a pulled activity source: unset means pulled with a source, else
 * reported; pulled without a source is an error naming the variable that lacks one.
 */
export function idleReleaseMode(
  setting: IdleReleaseMode | undefined,
  hasSource: boolean,
  sourceVariable: string,
): { ok: true; mode: IdleReleaseMode } | { ok: false; error: string } {
  const mode = setting ?? (hasSource ? "pulled" : "reported");
  if (mode === "pulled" && !hasSource)
    return { ok: false, error: `pulled needs a pulled activity source (${sourceVariable})` };
  return { ok: true, mode };
}

/**
 * reportedOnly keeps, for the reported mode, every pod except the running sandboxes nobody reported
 * activity for since their start, and counts those of them already past their idle timeout (the
 * ones since-start would release), so the step can say once why they stay.
 */
export function reportedOnly(pods: readonly V1Pod[], now: Date): { pods: V1Pod[]; unreported: number } {
  let unreported = 0;
  const kept = pods.filter((pod) => {
    if (!isRunningSandbox(pod) || hasReportedActivity(pod)) return true;
    const timeout = Number(pod.metadata?.annotations?.[IDLE_TIMEOUT_ANNOTATION]);
    const since = lastActiveOf(pod);
    if (Number.isFinite(timeout) && timeout > 0 && since && now.getTime() - since.getTime() > timeout * 1000)
      unreported++;
    return false;
  });
  return { pods: kept, unreported };
}

/** isRunningSandbox: the pod runs a sandbox and is not being deleted, so idleness applies to it. */
export function isRunningSandbox(pod: V1Pod): boolean {
  return !isTerminating(pod) && sandboxPhaseOf(pod) === SANDBOX_PHASE.RUNNING;
}

/**
 * planIdleRelease releases running sandboxes that have been idle longer than their idle-timeout
 * annotation (seconds), with stop reason Released and failure reason IdleTimeout. Activity is read
 * from the last-active annotation (written by POST /v1/activity), falling back to the start and
 * claim times. Sandboxes without an idle timeout run until released.
 *
 * `pulled` is a pulled activity source's answer (sandbox id → last active), when one is
 * configured: a sandbox's activity is then the later of the pulled time and the annotations, and a
 * pulled time that moved on by the push path's throttle is persisted in the last-active
 * annotation (so other readers and later runs see it). A sandbox released in this pass gets no
 * persist: its release already used the later time. Without `pulled` nothing is persisted.
 */
export function planIdleRelease(
  pods: readonly V1Pod[],
  reset: ResetSource,
  now: Date,
  pulled?: ReadonlyMap<string, Date>,
): Action[] {
  return pods.flatMap((pod): Action[] => {
    if (!isRunningSandbox(pod)) return [];
    const reported = pulled?.get(pod.metadata?.labels?.[SANDBOX_ID_LABEL] ?? "");
    const annotated = lastActiveOf(pod);
    // Traffic written by a router (or a proxy) reaches the annotation up to its throttle late:
    // when the annotation is what decides, that much more idleness is asked for, so traffic
    // through another host within the timeout never reads as idle.
    const lagging = hasReportedActivity(pod) && annotated && (!reported || annotated >= reported);
    const release = releaseIfIdle(pod, reset, later(annotated, reported), now, lagging ? throttleOf(pod) : 0);
    if (release) return [release];
    const persist = reported && recordPulledActivity(pod, reported);
    return persist ? [persist] : [];
  });
}

function later(a: Date | undefined, b: Date | undefined): Date | undefined {
  if (!a || !b) return a ?? b;
  return a.getTime() >= b.getTime() ? a : b;
}

/** throttleOf is the annotation's possible lag behind a sandbox's traffic (activityThrottleSeconds). */
function throttleOf(pod: V1Pod): number {
  return activityThrottleSeconds(Number(pod.metadata?.annotations?.[IDLE_TIMEOUT_ANNOTATION]));
}

function releaseIfIdle(
  pod: V1Pod,
  reset: ResetSource,
  last: Date | undefined,
  now: Date,
  lagSeconds: number,
): Action | undefined {
  const timeout = Number(pod.metadata?.annotations?.[IDLE_TIMEOUT_ANNOTATION]);
  if (!Number.isFinite(timeout) || timeout <= 0 || !last) return undefined;
  const idleSeconds = Math.floor((now.getTime() - last.getTime()) / 1000);
  if (idleSeconds <= timeout + lagSeconds) return undefined;
  const message = `idle for ${idleSeconds} s (idle timeout ${timeout} s)`;
  const result = releaseIntent(
    pod,
    {
      ...resetFrom(reset),
      stopReason: STOP_REASON.RELEASED,
      failureReason: "IdleTimeout",
      failureMessage: message,
    },
    now,
  );
  if (!result.ok) return undefined;
  return {
    target: podTarget(pod),
    why: `release idle sandbox: ${message}`,
    write: { op: "patch", patch: toJsonPatch(pod, result.intent) },
    event: { type: "Normal", reason: "IdleTimeout", action: "Release", note: message },
  };
}

/**
 * recordPulledActivity writes a pulled time into the last-active annotation when it moved on by
 * the throttle (shouldRecordActivity, as POST /v1/activity does), as a JSON Patch that tests the
 * resourceVersion and the sandbox id, so it never lands on a changed pod or another sandbox.
 */
function recordPulledActivity(pod: V1Pod, reported: Date): Action | undefined {
  const annotations = pod.metadata?.annotations;
  const time = rfc3339(reported);
  if (!shouldRecordActivity(annotations?.[LAST_ACTIVE_ANNOTATION], time)) return undefined;
  const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL] ?? "";
  const write: JsonPatchOp = annotations
    ? { op: "add", path: `/metadata/annotations/${escapePointer(LAST_ACTIVE_ANNOTATION)}`, value: time }
    : { op: "add", path: "/metadata/annotations", value: { [LAST_ACTIVE_ANNOTATION]: time } };
  return {
    target: podTarget(pod),
    why: `record pulled activity: last active ${time}`,
    write: {
      op: "patch",
      patch: [
        testVersion(pod),
        { op: "test", path: `/metadata/labels/${escapePointer(SANDBOX_ID_LABEL)}`, value: id },
        write,
      ],
    },
  };
}
