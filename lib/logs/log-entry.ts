// One line of a sandbox's logs, wherever it was read (the container's log, a runtime's LogDir
// file), in the form every surface shapes its answer from.

/** LOG_LEVELS are E2B's levels, lowest first: a level filter keeps its own and those after it. */
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * LogTime is an instant to the nanosecond: the kubelet stamps lines with RFC 3339 nanoseconds,
 * and two lines within one millisecond must keep their order. `ms` is Unix milliseconds (what
 * E2B's cursors count), `ns` the nanoseconds within that millisecond (0..999999).
 */
export interface LogTime {
  ms: number;
  ns: number;
}

/** LogEntry is one line: when, how severe, what it says, and where it came from (`fields`). */
export interface LogEntry extends LogTime {
  /** timestamp is RFC 3339 in UTC, with the precision the line was stamped with. */
  timestamp: string;
  level: LogLevel;
  /** message is the line's text, or a JSON line's message field. */
  message: string;
  /** line is the line as it was written (E2B v1's `logs[].line`). */
  line: string;
  /** fields are string values: the source (container or runtime) and a JSON line's own scalars. */
  fields: Record<string, string>;
}

const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/**
 * parseLogTime reads an RFC 3339 time with up to nanosecond precision (Date.parse stops at
 * milliseconds); undefined for anything else. Offsets are honoured.
 */
export function parseLogTime(text: string): LogTime | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const fraction = (m[2] ?? "").padEnd(9, "0");
  const base = Date.parse(`${m[1]}${m[3] === "Z" ? "Z" : m[3]}`);
  if (Number.isNaN(base)) return undefined;
  return { ms: base + Number(fraction.slice(0, 3)), ns: Number(fraction.slice(3)) };
}

/** formatLogTime writes a LogTime as RFC 3339 UTC, nanoseconds only when it has them. */
export function formatLogTime(t: LogTime): string {
  const iso = new Date(t.ms).toISOString();
  return t.ns === 0 ? iso : iso.replace(/Z$/, `${String(t.ns).padStart(6, "0")}Z`);
}

/** compareLogTime orders two instants (negative: a first). */
export function compareLogTime(a: LogTime, b: LogTime): number {
  return a.ms - b.ms || a.ns - b.ns;
}

/** atLeastLevel: the entry's level is `min` or more severe. */
export function atLeastLevel(level: LogLevel, min: LogLevel): boolean {
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(min);
}
