import * as v from "valibot";
import { parseTime, rfc3339 } from "../util/time.ts";
import { isLabelValue } from "./label-value.ts";

/** ACTIVITY_THROTTLE_SECONDS: a report only rewrites last-active when it moved on this much. */
export const ACTIVITY_THROTTLE_SECONDS = 30;

/** ActivityRequest is a proxy's batch of last-active times (POST /v1/activity). */
export const ActivityRequest = v.strictObject(
  {
    sandboxes: v.pipe(
      v.array(
        v.strictObject({
          id: v.pipe(v.string(), v.check(isLabelValue, "must be a sandbox id")),
          lastActive: v.pipe(v.string(), v.isoTimestamp("must be an RFC 3339 time")),
        }),
      ),
      v.minLength(1, "must list at least one sandbox"),
      v.maxLength(1000, "at most 1000 sandboxes per report"),
    ),
  },
  "must be a JSON object with a sandboxes list",
);
export type ActivityRequest = v.InferOutput<typeof ActivityRequest>;

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

/** latestPerSandbox keeps each sandbox's latest valid report time (RFC 3339, whole seconds). */
export function latestPerSandbox(report: ActivityRequest): Map<string, string> {
  const latest = new Map<string, Date>();
  for (const { id, lastActive } of report.sandboxes) {
    const at = parseTime(lastActive);
    const prev = latest.get(id);
    if (at && (!prev || at > prev)) latest.set(id, at);
  }
  return new Map([...latest].map(([id, at]) => [id, rfc3339(at)]));
}
