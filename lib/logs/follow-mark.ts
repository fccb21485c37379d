// Following a container's log by reading it again and again: which lines of a read are new.
import { compareLogTime, type LogEntry, type LogTime } from "./log-entry.ts";

/**
 * FollowMark is how far a follower has sent a container's lines: the instant of the last line
 * sent and how many lines of that instant it sent (the kubelet may stamp two lines alike).
 */
export interface FollowMark extends LogTime {
  sameInstant: number;
}

/** markAfter is the mark past `entries` (oldest first), starting from `mark`. */
export function markAfter(mark: FollowMark, entries: readonly LogEntry[]): FollowMark {
  let next = mark;
  for (const e of entries)
    next =
      compareLogTime(e, next) === 0
        ? { ...next, sameInstant: next.sameInstant + 1 }
        : { ms: e.ms, ns: e.ns, sameInstant: 1 };
  return next;
}

/**
 * newSince keeps the lines of a read (oldest first, as the kubelet returns them) that come after
 * the mark: later instants, and at the mark's own instant those beyond the ones already sent. A
 * read starts at a whole second at or before the mark, so it repeats lines; this drops them.
 */
export function newSince(entries: readonly LogEntry[], mark: FollowMark): LogEntry[] {
  let atMark = 0;
  return entries.filter((e) => {
    const c = compareLogTime(e, mark);
    if (c < 0) return false;
    if (c > 0) return true;
    atMark++;
    return atMark > mark.sameInstant;
  });
}
