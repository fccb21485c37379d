// The lifecycle events of a sandbox between its claim and its end: each pause and each resume
// (issue #39). The terminal record (record.ts) says how a sandbox ended; these say what happened
// on the way, so the history of a sandbox that was paused and resumed shows when, on which pods,
// and from which snapshot images.
import * as v from "valibot";
import { parseWith } from "../crd/parse-with.ts";
import { parseTime, rfc3339 } from "../util/time.ts";

/** LIFECYCLE_KINDS are the events kept: a pause, a resume. */
export const LIFECYCLE_KINDS = ["paused", "resumed"] as const;

/**
 * LifecycleEvent is one pause or one resume of a sandbox, keyed by (sandboxId, kind, n): n is the
 * n-th pause, or the n-th resume, of the sandbox, so a step that writes it again after a crash
 * names the same event and the store keeps one. podName is the pod the sandbox left (a pause) or
 * the pod it resumed on; images are the snapshot images by container; bytes, a pause's only, is
 * the size of the layers it committed.
 */
export const LifecycleEvent = v.pipe(
  v.object({
    sandboxId: v.pipe(v.string(), v.minLength(1, "must not be empty")),
    kind: v.picklist(LIFECYCLE_KINDS, 'must be "paused" or "resumed"'),
    n: v.pipe(v.number(), v.integer("must be an integer"), v.minValue(1, "must be at least 1")),
    /** at is an RFC 3339 time; the store keeps it in UTC, whole seconds (lifecycleEvent). */
    at: v.pipe(v.string(), v.isoTimestamp("must be an RFC 3339 time")),
    namespace: v.string(),
    poolName: v.string(),
    podName: v.string(),
    team: v.optional(v.string()),
    user: v.optional(v.string()),
    images: v.record(v.string(), v.string()),
    bytes: v.optional(
      v.pipe(v.number(), v.integer("must be an integer"), v.minValue(0, "must not be negative")),
    ),
  }),
  v.forward(
    v.partialCheck(
      [["kind"], ["bytes"]],
      (e) => e.bytes === undefined || e.kind === "paused",
      "only a pause has a size",
    ),
    ["bytes"],
  ),
);
export type LifecycleEvent = v.InferOutput<typeof LifecycleEvent>;

/**
 * lifecycleEvent checks an event before it is stored and writes its time as the history keeps
 * times (RFC 3339 in UTC, whole seconds, "Z"): text that sorts in time order in every backend,
 * whatever offset or fraction the caller gave. A bad event throws a RangeError naming its field,
 * so nothing malformed reaches the table.
 */
export function lifecycleEvent(e: LifecycleEvent): LifecycleEvent {
  const parsed = parseWith(LifecycleEvent, e);
  if (!parsed.ok) throw new RangeError(parsed.issues.map((i) => `${i.path}: ${i.message}`).join("; "));
  // isoTimestamp admits forms Date.parse does not read (a comma before the fraction).
  const at = parseTime(parsed.value.at);
  if (!at) throw new RangeError("at: must be an RFC 3339 time");
  return { ...parsed.value, at: rfc3339(at) };
}
