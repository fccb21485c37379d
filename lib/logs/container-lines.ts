// The sandbox container's log as the apiserver serves it (`pods/log`, timestamps=true): which
// part to ask for, and the entries of the answer since the sandbox's claim.
import { rfc3339 } from "../util/time.ts";
import { compareLogTime, formatLogTime, type LogEntry, type LogTime, parseLogTime } from "./log-entry.ts";
import { readLine } from "./read-line.ts";

/** CONTAINER_LOG_BYTES bounds any one read of a container's log (the kubelet's limitBytes). */
export const CONTAINER_LOG_BYTES = 4 * 1024 * 1024;
/** CONTAINER_TAIL_LINES bounds a read of the newest lines (filtered backward pages, follow polls). */
export const CONTAINER_TAIL_LINES = 5000;
/** LINE_BYTES is what a page's limit allows per entry when nothing filters (8 KiB a line). */
export const LINE_BYTES = 8 * 1024;
/** PAGE_BYTES_FLOOR is the least a page reads, so a page of a few entries still finds them. */
export const PAGE_BYTES_FLOOR = 256 * 1024;
/** FOLLOW_READ_BYTES bounds a follow's poll: what a second of output may add (more is read next poll). */
export const FOLLOW_READ_BYTES = 1024 * 1024;

/**
 * ContainerRead is one bounded read: the lines from `from` (ms; the claim when absent or earlier)
 * on, with `tailLines` only the newest that many of them, at most `bytes` (the kubelet's
 * limitBytes, counted from the first line it sends: a tail read cut by it loses its newest lines).
 */
export interface ContainerRead {
  from?: number;
  tailLines?: number;
  bytes: number;
}

/**
 * containerLogQuery is the pods/log query of one read of `container`: its lines from `read.from`
 * or `claimMs`, whichever is later (sinceTime is whole seconds, so the read starts at the second
 * that instant is in; the caller cuts the rest), bounded by `read.bytes` and `read.tailLines`.
 * Always with timestamps.
 */
export function containerLogQuery(
  container: string,
  claimMs: number,
  read: ContainerRead,
): Record<string, string> {
  const since = Math.max(claimMs, read.from ?? claimMs);
  return {
    container,
    timestamps: "true",
    sinceTime: rfc3339(new Date(Math.floor(since / 1000) * 1000)),
    limitBytes: String(read.bytes),
    ...(read.tailLines !== undefined ? { tailLines: String(read.tailLines) } : {}),
  };
}

/**
 * pageBytes is how much of the container's log a page reads: `limit` lines of LINE_BYTES, at
 * least PAGE_BYTES_FLOOR, at most CONTAINER_LOG_BYTES, so a page of 10 entries does not pull
 * 4 MiB through the control plane. A page that filters (level, search) reads CONTAINER_LOG_BYTES:
 * the kubelet cannot filter, and a smaller read would end a filtered page early.
 */
export function pageBytes(q: { limit: number; level?: string; search?: string }): number {
  if (q.level || q.search) return CONTAINER_LOG_BYTES;
  return Math.min(CONTAINER_LOG_BYTES, Math.max(PAGE_BYTES_FLOOR, q.limit * LINE_BYTES));
}

/**
 * filledLimit tells whether an answer of `text` filled a limitBytes of `bytes` (so its last line
 * may be cut off). It counts UTF-8 bytes without encoding a copy of the answer (and without
 * Node's Buffer, which the Worker lacks): a UTF-16 unit is 1 to 3 bytes (a surrogate pair 4), so
 * the length alone decides unless it falls between bytes / 3 and bytes.
 */
export function filledLimit(text: string, bytes: number): boolean {
  if (text.length >= bytes) return true;
  if (text.length * 3 < bytes) return false;
  let n = 0;
  for (let i = 0; i < text.length && n < bytes; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n >= bytes;
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
 * containerReadFor is the read a page needs, unless it pages back from a cursor (backwardRead):
 * forward pages read from their cursor (or the claim) on; backward pages without a cursor the
 * newest lines: `limit` of them when nothing filters (the page needs no more), else
 * CONTAINER_TAIL_LINES (so a filtered backward page reaches back that many lines).
 */
export function containerReadFor(q: {
  direction: "forward" | "backward";
  cursor?: number;
  limit: number;
  level?: string;
  search?: string;
}): ContainerRead {
  const bytes = pageBytes(q);
  if (q.direction === "forward") return q.cursor === undefined ? { bytes } : { from: q.cursor, bytes };
  const filtered = Boolean(q.level || q.search);
  return { tailLines: filtered ? CONTAINER_TAIL_LINES : Math.max(1, q.limit), bytes };
}
