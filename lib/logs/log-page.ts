// One page of a sandbox's logs, as E2B pages them: a window of time from a cursor (Unix ms), a
// direction, a minimum level, a substring, a limit.
import { atLeastLevel, compareLogTime, type LogEntry, type LogLevel } from "./log-entry.ts";

/** LOGS_WINDOW_MS is how far a page reaches from its cursor (E2B's logsOldestLimit: 7 days). */
export const LOGS_WINDOW_MS = 7 * 24 * 3600 * 1000;

export type LogsDirection = "forward" | "backward";

/** PageQuery says which entries a page holds. */
export interface PageQuery {
  /** cursor (Unix ms): forward pages start at it, backward pages end at it, both inclusive. */
  cursor?: number;
  direction: LogsDirection;
  limit: number;
  /** level: only entries at this level or above. */
  level?: LogLevel;
  /** search: only entries whose message contains it (case-sensitive). */
  search?: string;
}

/**
 * pageWindow is E2B's window of a page (LogQueryWindow): forward from the cursor, or backward to
 * it, LOGS_WINDOW_MS wide; without a cursor, the LOGS_WINDOW_MS up to now. Never before now
 * minus the window. Bounds are inclusive, as E2B's store queries them.
 */
export function pageWindow(q: Pick<PageQuery, "cursor" | "direction">, nowMs: number): [number, number] {
  const oldest = nowMs - LOGS_WINDOW_MS;
  let [start, end] = [oldest, nowMs];
  if (q.cursor !== undefined)
    [start, end] =
      q.direction === "forward"
        ? [q.cursor, q.cursor + LOGS_WINDOW_MS]
        : [q.cursor - LOGS_WINDOW_MS, q.cursor];
  start = Math.max(start, oldest);
  end = Math.max(end, oldest);
  return [Math.min(start, end), end];
}

/**
 * logPage picks a page from entries of any order and source: those in the window (without a
 * cursor the window's end is not applied: a node's clock a little ahead of ours must not hide
 * its newest lines), at the level or above, containing the search text, sorted by time (oldest
 * first forward with the entries of one instant in the order read, and the exact reverse
 * backward), at most `limit`.
 */
export function logPage(entries: readonly LogEntry[], q: PageQuery, nowMs: number): LogEntry[] {
  const [start, end] = pageWindow(q, nowMs);
  const kept = entries.filter(
    (e) =>
      e.ms >= start &&
      (q.cursor === undefined || e.ms <= end) &&
      (!q.level || atLeastLevel(e.level, q.level)) &&
      (!q.search || e.message.includes(q.search)),
  );
  const sorted = kept
    .map((e, i) => ({ e, i }))
    .sort((a, b) => compareLogTime(a.e, b.e) || a.i - b.i)
    .map((x) => x.e);
  if (q.direction === "backward") sorted.reverse();
  return sorted.slice(0, q.limit);
}

/** E2bLogEntry is E2B's SandboxLogEntry. */
export interface E2bLogEntry {
  timestamp: string;
  level: LogLevel;
  message: string;
  fields: Record<string, string>;
}

/** e2bEntry shapes an entry as E2B's SandboxLogEntry. */
export function e2bEntry(e: LogEntry): E2bLogEntry {
  return { timestamp: e.timestamp, level: e.level, message: e.message, fields: e.fields };
}

/** e2bLogsV1 is E2B's SandboxLogs: the lines (`logs`) and the same entries structured (`logEntries`). */
export function e2bLogsV1(page: readonly LogEntry[]): {
  logs: { timestamp: string; line: string }[];
  logEntries: E2bLogEntry[];
} {
  return {
    logs: page.map((e) => ({ timestamp: e.timestamp, line: e.line })),
    logEntries: page.map(e2bEntry),
  };
}
