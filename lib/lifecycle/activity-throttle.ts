// How often a sandbox's traffic is worth a write of its last-active annotation: the throttle the
// router, the activity report and idle release share (idle release allows for the lag it causes).
// Apart from activity.ts's request schema, so the router's thread loads no schema for it.
import { parseTime } from "../util/time.ts";

/** ACTIVITY_THROTTLE_SECONDS: a report only rewrites last-active when it moved on this much. */
export const ACTIVITY_THROTTLE_SECONDS = 30;

/** THROTTLE_SHARE: a busy sandbox's last-active is at most this share of its idle timeout old. */
export const THROTTLE_SHARE = 1 / 5;

/**
 * activityThrottleSeconds is how far a sandbox's traffic must have moved past its stored
 * last-active for the router to write it: THROTTLE_SHARE of its idle timeout (at least 1 s, the
 * annotation's resolution), never more than ACTIVITY_THROTTLE_SECONDS. It is also how far the
 * annotation may lag the traffic, so idle release allows that much more (planIdleRelease).
 */
export function activityThrottleSeconds(idleTimeoutSeconds: number | undefined): number {
  if (idleTimeoutSeconds === undefined || !(idleTimeoutSeconds > 0)) return ACTIVITY_THROTTLE_SECONDS;
  return Math.min(ACTIVITY_THROTTLE_SECONDS, Math.max(1, Math.floor(idleTimeoutSeconds * THROTTLE_SHARE)));
}

/**
 * shouldRecordActivity says whether a reported time is worth a write: it must be later than the
 * stored one by at least the throttle, so a busy sandbox costs a write every 30 s at most, and an
 * older report never moves last-active backwards.
 */
export function shouldRecordActivity(
  stored: string | undefined,
  reported: string,
  throttleSeconds = ACTIVITY_THROTTLE_SECONDS,
): boolean {
  const next = parseTime(reported);
  if (!next) return false;
  const prev = parseTime(stored);
  return !prev || next.getTime() - prev.getTime() >= throttleSeconds * 1000;
}
