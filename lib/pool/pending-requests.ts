// status.pendingRequests counts the creates waiting for an idle pod of a pool. agentbox mirrors an
// in-process queue; here the waiters are the open requests on each host, so each host publishes
// its own count in a pool annotation of its own (no host overwrites another's), throttled, and
// update-status sums the fresh ones. Upstream's autoscaler reads its live in-process queue and its
// mirror may lag (every ~3 s, 20 % moves); ours reads these marks, so they follow the waiters
// within a second: a count that stays high after its waiters were served grows the pool again.
import type { SandboxPool } from "../api/sandbox-pool.ts";
import { parseTime, rfc3339 } from "../util/time.ts";

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

/** encodeMark and decodeMark are the annotation value: "<count> <RFC 3339>". */
export function encodeMark(mark: PendingMark): string {
  return `${mark.count} ${rfc3339(mark.at)}`;
}

export function decodeMark(value: string | undefined): PendingMark | undefined {
  const [count, time, ...rest] = (value ?? "").split(" ");
  const at = parseTime(time);
  const n = Number(count);
  return rest.length === 0 && at && Number.isInteger(n) && n >= 0 ? { count: n, at } : undefined;
}

/**
 * shouldPublish is the throttle: publish when the count crosses the 0/>0 boundary (at once), or
 * when it changed and the last write is FLUSH_INTERVAL_MS old; a count of 0 that was never
 * published needs no write.
 */
export function shouldPublish(last: PendingMark | undefined, count: number, now: Date): boolean {
  if (!last) return count > 0;
  if ((last.count === 0) !== (count === 0)) return true;
  if (count === last.count) return false;
  return now.getTime() - last.at.getTime() >= FLUSH_INTERVAL_MS;
}

/**
 * nextPublishAt is when a count the throttle holds back may be published: the end of the interval
 * when it changed, the heartbeat for a steady count above 0, else never.
 */
export function nextPublishAt(last: PendingMark, count: number): Date | undefined {
  const due = new Date(last.at.getTime() + FLUSH_INTERVAL_MS);
  if (count !== last.count && shouldPublish(last, count, due)) return due;
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
 * future (clock skew) counts as fresh.
 */
export function pendingRequestsOf(pool: SandboxPool, now: Date): number {
  let total = 0;
  for (const [key, value] of Object.entries(pool.metadata?.annotations ?? {})) {
    if (!key.startsWith(PENDING_REQUESTS_PREFIX)) continue;
    const mark = decodeMark(value);
    if (mark && now.getTime() - mark.at.getTime() <= FRESH_SECONDS * 1000) total += mark.count;
  }
  return total;
}
