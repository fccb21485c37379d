// The autoscaler's and the Env's recent decisions as a timeline: the Events about an Env and its
// member pools (ScaledUp/ScaledDown/Rescaled, MemberCreated, MemberRefreshed, EnvEdited on the
// Env; ScaleUpInsufficient, ScalingUp, RolloutStarted… on the pools), newest first.
import type { CoreV1Event } from "@kubernetes/client-node";

/** TimelineEntry is one Event as the timeline shows it. */
export interface TimelineEntry {
  /** time is RFC 3339: when it (last) happened. */
  time: string;
  type: string;
  reason: string;
  /** object is "SandboxEnv/name" or "SandboxPool/name". */
  object: string;
  message: string;
  count: number;
}

/** TIMELINE_LENGTH is how many Events a timeline keeps (the newest). */
export const TIMELINE_LENGTH = 100;

/**
 * timeOf is when an Event last happened: its series' last observation, its eventTime (Events
 * written through events.k8s.io), else its lastTimestamp, firstTimestamp or creation. The
 * apiserver's JSON carries strings; typed clients Dates: both are read.
 */
function timeOf(e: CoreV1Event): string {
  const candidates: unknown[] = [
    e.series?.lastObservedTime,
    e.eventTime,
    e.lastTimestamp,
    e.firstTimestamp,
    e.metadata?.creationTimestamp,
  ];
  for (const c of candidates) {
    const ms = c instanceof Date ? c.getTime() : typeof c === "string" ? Date.parse(c) : Number.NaN;
    if (Number.isFinite(ms)) return new Date(ms).toISOString();
  }
  return "";
}

/**
 * envTimeline orders the Events about an Env (any list of them: the reads filter by object)
 * newest first, keeping the newest `limit`; ties keep the apiserver's order.
 */
export function envTimeline(events: readonly CoreV1Event[], limit = TIMELINE_LENGTH): TimelineEntry[] {
  return events
    .map(
      (e): TimelineEntry => ({
        time: timeOf(e),
        type: e.type ?? "Normal",
        reason: e.reason ?? "",
        object: `${e.involvedObject?.kind ?? ""}/${e.involvedObject?.name ?? ""}`,
        message: e.message ?? "",
        count: e.series?.count ?? e.count ?? 1,
      }),
    )
    .sort((a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : 0))
    .slice(0, limit);
}
