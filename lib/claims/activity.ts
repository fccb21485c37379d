import * as v from "valibot";
import { issuePath } from "../crd/parse-with.ts";
import { isLabelValue } from "../kube/label-value.ts";
import { parseTime, rfc3339 } from "../util/time.ts";

/** MAX_REPORTED_SANDBOXES caps a pushed report (POST /v1/activity): more is a 400 naming `sandboxes`. */
export const MAX_REPORTED_SANDBOXES = 1000;

const ActivityEntry = {
  id: v.pipe(v.string(), v.check(isLabelValue, "must be a sandbox id")),
  lastActive: v.pipe(v.string(), v.isoTimestamp("must be an RFC 3339 time")),
};

/** ActivityRequest is a proxy's batch of last-active times (POST /v1/activity). */
export const ActivityRequest = v.strictObject(
  {
    sandboxes: v.pipe(
      v.array(v.strictObject(ActivityEntry)),
      v.minLength(1, "must list at least one sandbox"),
      v.maxLength(MAX_REPORTED_SANDBOXES, `at most ${MAX_REPORTED_SANDBOXES} sandboxes per report`),
    ),
  },
  "must be a JSON object with a sandboxes list",
);
export type ActivityRequest = v.InferOutput<typeof ActivityRequest>;

/**
 * SELECTOR_CHARS bounds one `sandbox-id in (…)` label selector as sent (URL-encoded): with the path
 * and the read options, the request line stays under the 8 KiB that proxies commonly accept.
 * About 275 of the ids this control plane mints (24 characters) fit in one.
 */
export const SELECTOR_CHARS = 7500;

/**
 * idSelectors packs ids into as few `<label> in (…)` selectors as fit SELECTOR_CHARS each (after
 * URL encoding), each also carrying the `scope` terms (a tenant's team and user), so a report of
 * 1,000 ids costs a few lists of exactly those pods, never one per id nor one of every pod. The
 * ids must be label values (the report's schema checks), so none can change a selector's meaning.
 */
export function idSelectors(
  label: string,
  ids: readonly string[],
  scope: readonly string[] = [],
  maxChars = SELECTOR_CHARS,
): string[] {
  const render = (chunk: readonly string[]) => [`${label} in (${chunk.join(",")})`, ...scope].join(",");
  const empty = encodeURIComponent(render([])).length;
  const COMMA = encodeURIComponent(",").length;
  const selectors: string[] = [];
  let chunk: string[] = [];
  let size = empty;
  for (const id of ids) {
    const cost = encodeURIComponent(id).length;
    if (chunk.length > 0 && size + COMMA + cost > maxChars) {
      selectors.push(render(chunk));
      chunk = [];
      size = empty;
    }
    size += (chunk.length > 0 ? COMMA : 0) + cost;
    chunk.push(id);
  }
  if (chunk.length > 0) selectors.push(render(chunk));
  return selectors;
}

/** MAX_PULLED_SANDBOXES bounds a pulled report: one answer covers every sandbox a proxy serves. */
export const MAX_PULLED_SANDBOXES = 100_000;

/**
 * ActivityReport is what a pulled activity source answers (GET, see functions/activity-source.ts):
 * the push body's shape, but it may be empty (nothing was active), may list up to
 * MAX_PULLED_SANDBOXES, and other keys are ignored, so a proxy's stats endpoint can carry more.
 */
export const ActivityReport = v.object(
  {
    sandboxes: v.pipe(
      v.array(v.object(ActivityEntry)),
      v.maxLength(MAX_PULLED_SANDBOXES, `at most ${MAX_PULLED_SANDBOXES} sandboxes per report`),
    ),
  },
  "must be a JSON object with a sandboxes list",
);
export type ActivityReport = v.InferOutput<typeof ActivityReport>;

/** latestPerSandbox keeps each sandbox's latest valid report time (RFC 3339, whole seconds). */
export function latestPerSandbox(report: {
  sandboxes: readonly { id: string; lastActive: string }[];
}): Map<string, string> {
  const latest = new Map<string, Date>();
  for (const { id, lastActive } of report.sandboxes) {
    const at = parseTime(lastActive);
    const prev = latest.get(id);
    if (at && (!prev || at > prev)) latest.set(id, at);
  }
  return new Map([...latest].map(([id, at]) => [id, rfc3339(at)]));
}

/**
 * parseActivityReport validates a pulled source's JSON body and reduces it to each sandbox's
 * latest time. A body that does not validate is an error as a whole (never a partial map): the
 * caller must not mistake a broken source for one that reports no activity.
 */
export function parseActivityReport(
  body: unknown,
): { ok: true; value: Map<string, Date> } | { ok: false; error: string } {
  const parsed = v.safeParse(ActivityReport, body);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const path = issuePath(issue);
    return { ok: false, error: `invalid activity report: ${path ? `${path}: ` : ""}${issue.message}` };
  }
  return {
    ok: true,
    value: new Map([...latestPerSandbox(parsed.output)].map(([id, at]) => [id, new Date(at)])),
  };
}
