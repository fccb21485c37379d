// The sandbox container's log as the apiserver serves it (`pods/log`, timestamps=true): which
// part to ask for, and the entries of the answer since the sandbox's claim.
import { rfc3339 } from "../util/time.ts";
import { compareLogTime, formatLogTime, type LogEntry, type LogTime, parseLogTime } from "./log-entry.ts";
import { readLine } from "./read-line.ts";

/** CONTAINER_LOG_BYTES bounds one read of a container's log (the kubelet's limitBytes). */
export const CONTAINER_LOG_BYTES = 4 * 1024 * 1024;
/** CONTAINER_TAIL_LINES bounds a read of the newest lines (backward pages, follow polls). */
export const CONTAINER_TAIL_LINES = 5000;

/**
 * ContainerRead is which lines a read asks for: those from `from` (ms; the claim when absent) on,
 * or with `tail` only the newest CONTAINER_TAIL_LINES of them.
 */
export interface ContainerRead {
  from?: number;
  tail?: boolean;
}

/**
 * containerLogQuery is the pods/log query of one bounded read of `container`: its lines from
 * `read.from` or the claim (ms), whichever is later (sinceTime is whole seconds, so the read
 * starts at the second that instant is in; the caller cuts the rest), all of them up to
 * limitBytes, or with `read.tail` the newest CONTAINER_TAIL_LINES. Always with timestamps.
 */
export function containerLogQuery(
  container: string,
  claimMs: number,
  read: ContainerRead,
  limitBytes = CONTAINER_LOG_BYTES,
): Record<string, string> {
  const since = Math.max(claimMs, read.from ?? claimMs);
  return {
    container,
    timestamps: "true",
    sinceTime: rfc3339(new Date(Math.floor(since / 1000) * 1000)),
    limitBytes: String(limitBytes),
    ...(read.tail ? { tailLines: String(CONTAINER_TAIL_LINES) } : {}),
  };
}

/**
 * containerEntries reads a pods/log answer (each line `<RFC 3339 nanoseconds> <text>`) into
 * entries, oldest first, keeping only lines stamped at or after the claim (`claim`, ms): the
 * kubelet's sinceTime is whole seconds, and a container that took the claim's fast path ran
 * before it. A line without a readable stamp is dropped (it cannot be placed after the claim),
 * and so is a last line cut off by limitBytes (`truncated`: the answer filled the limit).
 */
export function containerEntries(
  text: string,
  claim: LogTime,
  truncated: boolean,
  fields: Record<string, string>,
): LogEntry[] {
  const lines = text.split("\n");
  if (lines.at(-1) === "" || truncated) lines.pop();
  const out: LogEntry[] = [];
  for (const raw of lines) {
    const space = raw.indexOf(" ");
    const time = space > 0 ? parseLogTime(raw.slice(0, space)) : undefined;
    if (!time || compareLogTime(time, claim) < 0) continue;
    const line = raw.slice(space + 1).replace(/\r$/, "");
    const facts = readLine(line);
    out.push({
      ...time,
      timestamp: formatLogTime(time),
      level: facts.level,
      message: facts.message,
      line,
      fields: { ...facts.fields, ...fields },
    });
  }
  return out;
}

/**
 * containerReadFor is the read a page needs: forward pages read from their cursor (or the claim)
 * on, backward pages the newest lines (a backward page reaches back CONTAINER_TAIL_LINES lines).
 */
export function containerReadFor(q: { direction: "forward" | "backward"; cursor?: number }): ContainerRead {
  return q.direction === "forward" ? (q.cursor === undefined ? {} : { from: q.cursor }) : { tail: true };
}

/**
 * claimCut is the first instant (ms) whose lines are the sandbox's. The claim's time is whole
 * seconds (the claimed-at annotation), so a container that already ran at the claim (the fast
 * path keeps it: `startedMs` before the claim's second) printed lines in that second before the
 * claim: the cut is the end of that second. A container started at or after the claim's second
 * printed nothing before it, and its lines count from the claim.
 */
export function claimCut(claimedMs: number, startedMs: number | undefined): number {
  return startedMs !== undefined && startedMs < claimedMs ? claimedMs + 1000 : claimedMs;
}
