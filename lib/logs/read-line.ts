// What a log line says about itself: its level, message, fields and time, where it can be told.
// Container logs through the apiserver do not say stdout or stderr, so the line is all there is.
import { type LogLevel, type LogTime, parseLogTime } from "./log-entry.ts";

/** LineFacts are what readLine tells of a line; `time` only when the line carries one. */
export interface LineFacts {
  level: LogLevel;
  message: string;
  fields: Record<string, string>;
  time?: LogTime;
}

/** MAX_FIELDS and MAX_FIELD_CHARS bound the fields a JSON line contributes to an entry. */
export const MAX_FIELDS = 32;
export const MAX_FIELD_CHARS = 1024;

const WORDS: Record<string, LogLevel> = {
  trace: "debug",
  debug: "debug",
  dbg: "debug",
  verbose: "debug",
  info: "info",
  information: "info",
  notice: "info",
  warn: "warn",
  warning: "warn",
  error: "error",
  err: "error",
  fatal: "error",
  panic: "error",
  critical: "error",
  crit: "error",
  alert: "error",
  emerg: "error",
  emergency: "error",
};

/** levelOf maps a level word (any case) or a pino/bunyan number (10..60) to E2B's level. */
export function levelOf(value: unknown): LogLevel | undefined {
  if (typeof value === "number" && Number.isFinite(value)) {
    if (value < 30) return "debug";
    if (value < 40) return "info";
    return value < 50 ? "warn" : "error";
  }
  return typeof value === "string" ? WORDS[value.trim().toLowerCase()] : undefined;
}

const LEVEL_KEYS = ["level", "lvl", "severity", "log.level"];
const MESSAGE_KEYS = ["msg", "message"];
const TIME_KEYS = ["time", "ts", "timestamp", "@timestamp"];

/** timeOf reads a JSON line's time: RFC 3339, or Unix seconds (or milliseconds past 1e12). */
function timeOf(value: unknown): LogTime | undefined {
  if (typeof value === "string") return parseLogTime(value);
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) return undefined;
  const ms = value > 1e12 ? value : value * 1000;
  const whole = Math.floor(ms);
  return { ms: whole, ns: Math.round((ms - whole) * 1e6) };
}

const first = (o: Record<string, unknown>, keys: readonly string[]) => keys.find((k) => o[k] !== undefined);

/** readJsonLine reads a JSON object line, or undefined when the line is not one. */
function readJsonLine(line: string): LineFacts | undefined {
  if (!line.startsWith("{")) return undefined;
  let o: unknown;
  try {
    o = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof o !== "object" || o === null || Array.isArray(o)) return undefined;
  const obj = o as Record<string, unknown>;
  const levelKey = first(obj, LEVEL_KEYS);
  const messageKey = first(obj, MESSAGE_KEYS);
  const timeKey = first(obj, TIME_KEYS);
  const time = timeKey ? timeOf(obj[timeKey]) : undefined;
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (Object.keys(fields).length >= MAX_FIELDS) break;
    if (k === levelKey || k === messageKey || (k === timeKey && time)) continue;
    if (v === null || typeof v === "object") continue;
    fields[k] = String(v).slice(0, MAX_FIELD_CHARS);
  }
  const message = messageKey && typeof obj[messageKey] === "string" ? (obj[messageKey] as string) : line;
  return {
    level: (levelKey && levelOf(obj[levelKey])) || "info",
    message,
    fields,
    ...(time ? { time } : {}),
  };
}

const LEADING_TIME = /^(\d{4}-\d{2}-\d{2}T\S+)\s+/;
const LEADING_LEVEL = /^[[(<]?([A-Za-z]+)[\])>]?:?(?:\s|$)/;
const LOGFMT_LEVEL = /(?:^|\s)(?:level|lvl)=("?)([A-Za-z]+)\1(?:\s|$)/;

/**
 * readLine tells a line's level, message, fields and time. A JSON object line gives its level
 * field (level, lvl, severity: a word or a pino number), its message (msg, message), its time
 * (time, ts, timestamp) and its other scalar fields. A text line may start with an RFC 3339 time,
 * then a level word (`ERROR`, `[warn]`, `Warning:`), or carry logfmt's `level=`. Anything else
 * is "info" with the line as its message.
 */
export function readLine(line: string): LineFacts {
  const json = readJsonLine(line);
  if (json) return json;
  const stamped = LEADING_TIME.exec(line);
  const time = stamped?.[1] ? parseLogTime(stamped[1]) : undefined;
  const rest = time && stamped ? line.slice(stamped[0].length) : line;
  const word = LEADING_LEVEL.exec(rest)?.[1];
  const level = (word && levelOf(word)) || levelOf(LOGFMT_LEVEL.exec(rest)?.[2]) || "info";
  return { level, message: line, fields: {}, ...(time ? { time } : {}) };
}
