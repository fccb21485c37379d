// status.pendingRequests counts the creates waiting for an idle pod of a pool. agentbox mirrors an
// in-process queue; here the waiters are the open requests on each host, so each host publishes
// its own count in a pool annotation of its own (no host overwrites another's), throttled, and
// update-status sums the fresh ones. Upstream's autoscaler reads its live in-process queue and its
// mirror may lag (every ~3 s, 20 % moves); ours reads these marks, which follow the waiters within
// a second. Within that second a mark still counts waiters already served: each of them claimed
// its pod with the mark that counted it (SERVED_MARK_ANNOTATION), and the autoscaler takes those
// pods off the mark (unservedPending), so one demand is never grown for twice.
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { parseTime } from "../util/time.ts";

/** PENDING_REQUESTS_PREFIX prefixes each host's annotation: `<prefix><host id>: "<count> <time>"`. */
export const PENDING_REQUESTS_PREFIX = "pending-requests.agentbox.navix.sh/";
/** FLUSH_INTERVAL_MS: a host rewrites its count at most this often, unless it crosses 0/>0. */
export const FLUSH_INTERVAL_MS = 1000;
/** FRESH_SECONDS: a host's count older than this is ignored (the host is gone, or stopped writing). */
export const FRESH_SECONDS = 60;
/** HEARTBEAT_MS: a host rewrites a steady count this often, so it stays fresh while requests wait. */
export const HEARTBEAT_MS = 20_000;

/** PendingMark is one host's published count and when it was written. */
export interface PendingMark {
  count: number;
  at: Date;
}

/**
 * encodeMark and decodeMark are the annotation value: "<count> <RFC 3339 with milliseconds>" (the
 * milliseconds tell apart two marks a host writes within one second; whole seconds still read).
 */
export function encodeMark(mark: PendingMark): string {
  return `${mark.count} ${mark.at.toISOString()}`;
}

export function decodeMark(value: string | undefined): PendingMark | undefined {
  const [count, time, ...rest] = (value ?? "").split(" ");
  const at = parseTime(time);
  const n = Number(count);
  return rest.length === 0 && at && Number.isInteger(n) && n >= 0 ? { count: n, at } : undefined;
}

/**
 * shouldPublish is the throttle: publish when the count crosses the 0/>0 boundary (at once), or
 * when the waiters changed (one came or went, even if the count is the same: a mark counts those
 * waiters, see SERVED_MARK_ANNOTATION) and the last write is FLUSH_INTERVAL_MS old; a count of 0
 * that was never published needs no write.
 */
export function shouldPublish(
  last: PendingMark | undefined,
  count: number,
  changed: boolean,
  now: Date,
): boolean {
  if (!last) return count > 0;
  if ((last.count === 0) !== (count === 0)) return true;
  if (!changed) return false;
  return now.getTime() - last.at.getTime() >= FLUSH_INTERVAL_MS;
}

/**
 * nextPublishAt is when a change the throttle holds back may be published: the end of the interval
 * when the waiters changed, the heartbeat for a steady count above 0, else never.
 */
export function nextPublishAt(last: PendingMark, count: number, changed: boolean): Date | undefined {
  const due = new Date(last.at.getTime() + FLUSH_INTERVAL_MS);
  if (changed && shouldPublish(last, count, changed, due)) return due;
  if (count > 0) return new Date(last.at.getTime() + HEARTBEAT_MS);
  return undefined;
}

/** staleMarks are the pool's marks past FRESH_SECONDS (or garbled): update-status removes them. */
export function staleMarks(pool: SandboxPool, now: Date): string[] {
  return Object.entries(pool.metadata?.annotations ?? {})
    .filter(([key, value]) => {
      if (!key.startsWith(PENDING_REQUESTS_PREFIX)) return false;
      const mark = decodeMark(value);
      return !mark || now.getTime() - mark.at.getTime() > FRESH_SECONDS * 1000;
    })
    .map(([key]) => key);
}

/**
 * pendingRequestsOf sums the fresh counts the hosts published on the pool; a mark from the
 * future (clock skew) counts as fresh. With `served` (servedMarks of the group's pods), each mark
 * counts only its waiters that have not claimed a pod yet.
 */
export function pendingRequestsOf(
  pool: SandboxPool,
  now: Date,
  served: ReadonlyMap<string, number> = new Map(),
): number {
  let total = 0;
  const name = pool.metadata?.name ?? "";
  for (const [key, value] of Object.entries(pool.metadata?.annotations ?? {})) {
    if (!key.startsWith(PENDING_REQUESTS_PREFIX)) continue;
    const mark = decodeMark(value);
    if (!mark || now.getTime() - mark.at.getTime() > FRESH_SECONDS * 1000) continue;
    total += Math.max(0, mark.count - (served.get(servedMark(name, key, value)) ?? 0));
  }
  return total;
}

/**
 * SERVED_MARK_ANNOTATION is set on a pod claimed by a create that waited: the mark that counted
 * that create (servedMark). While the mark stands unchanged, the pod is one of its waiters served.
 */
export const SERVED_MARK_ANNOTATION = "autoscaler.agentbox.navix.sh/served-mark";

/** servedMark names one published mark: the pool, the host's annotation key and its value. */
export function servedMark(pool: string, key: string, value: string): string {
  return `${pool} ${key} ${value}`;
}

/** servedMarks counts the live pods by the mark whose waiter claimed them. */
export function servedMarks(
  pods: readonly { metadata?: { annotations?: Record<string, string>; deletionTimestamp?: unknown } }[],
): Map<string, number> {
  const out = new Map<string, number>();
  for (const pod of pods) {
    const mark = pod.metadata?.annotations?.[SERVED_MARK_ANNOTATION];
    if (mark && !pod.metadata?.deletionTimestamp) out.set(mark, (out.get(mark) ?? 0) + 1);
  }
  return out;
}
