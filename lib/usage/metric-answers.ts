// A sandbox's samples as the two APIs answer them, and their queries read: E2B's SandboxMetric
// (spec/openapi.yml: timestamps in unix seconds) and the native API's (RFC 3339).
import { rfc3339 } from "../util/time.ts";
import type { UsageSample } from "./sample.ts";

/** E2bSandboxMetric is E2B's SandboxMetric: one point, every field required. */
export type E2bSandboxMetric = Omit<UsageSample, "sandboxId" | "at"> & {
  /** timestamp is deprecated in E2B's spec but still required; timestampUnix is in seconds. */
  timestamp: string;
  timestampUnix: number;
};

/** e2bMetric is one sample in E2B's shape. */
export function e2bMetric(s: UsageSample): E2bSandboxMetric {
  return {
    timestamp: s.at,
    timestampUnix: Math.floor(Date.parse(s.at) / 1000),
    cpuCount: s.cpuCount,
    cpuUsedPct: s.cpuUsedPct,
    memUsed: s.memUsed,
    memTotal: s.memTotal,
    memCache: s.memCache,
    diskUsed: s.diskUsed,
    diskTotal: s.diskTotal,
  };
}

/** NativeMetric is one sample as the native API answers it (units in the names). */
export interface NativeMetric {
  at: string;
  cpuCount: number;
  cpuUsedPercent: number;
  memoryUsedBytes: number;
  memoryTotalBytes: number;
  memoryCacheBytes: number;
  diskUsedBytes: number;
  diskTotalBytes: number;
}

/** nativeMetric is one sample in the native API's shape. */
export function nativeMetric(s: UsageSample): NativeMetric {
  return {
    at: s.at,
    cpuCount: s.cpuCount,
    cpuUsedPercent: s.cpuUsedPct,
    memoryUsedBytes: s.memUsed,
    memoryTotalBytes: s.memTotal,
    memoryCacheBytes: s.memCache,
    diskUsedBytes: s.diskUsed,
    diskTotalBytes: s.diskTotal,
  };
}

/** RangeRead is a query's time range (RFC 3339 bounds, each optional), or the field that is wrong and why. */
export type RangeRead =
  | { ok: true; from?: string; to?: string }
  | { ok: false; field: string; message: string };

/** MAX_UNIX_SECONDS bounds a time in seconds to year 9999 (RFC 3339's four-digit years). */
const MAX_UNIX_SECONDS = 253402300799;

/**
 * unixRange reads E2B's `start`/`end` (unix seconds, integers ≥ 0, each optional; start not
 * after end) into RFC 3339 bounds; a bad one names its field.
 */
export function unixRange(start: string | undefined, end: string | undefined): RangeRead {
  const read = (field: string, raw: string | undefined) => {
    if (raw === undefined) return { ok: true as const, value: undefined };
    if (!/^\d{1,12}$/.test(raw) || Number(raw) > MAX_UNIX_SECONDS)
      return { ok: false as const, field, message: "must be unix seconds (an integer, 0 or more)" };
    return { ok: true as const, value: rfc3339(new Date(Number(raw) * 1000)) };
  };
  return bounded(read("start", start), read("end", end), "start", "end");
}

/** rfc3339Range reads the native `from`/`to` (RFC 3339, each optional; from not after to). */
export function rfc3339Range(from: string | undefined, to: string | undefined): RangeRead {
  const read = (field: string, raw: string | undefined) => {
    if (raw === undefined) return { ok: true as const, value: undefined };
    const ms = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i.test(raw) ? Date.parse(raw) : NaN;
    if (Number.isNaN(ms))
      return { ok: false as const, field, message: "must be an RFC 3339 time, e.g. 2026-01-02T15:04:05Z" };
    return { ok: true as const, value: new Date(ms).toISOString() };
  };
  return bounded(read("from", from), read("to", to), "from", "to");
}

type Bound = { ok: true; value: string | undefined } | { ok: false; field: string; message: string };

function bounded(a: Bound, b: Bound, first: string, second: string): RangeRead {
  if (!a.ok) return a;
  if (!b.ok) return b;
  if (a.value !== undefined && b.value !== undefined && Date.parse(a.value) > Date.parse(b.value))
    return { ok: false, field: first, message: `must not be after ${second}` };
  return { ok: true, ...(a.value ? { from: a.value } : {}), ...(b.value ? { to: b.value } : {}) };
}

/** MAX_METRIC_IDS is how many sandboxes one `GET /sandboxes/metrics` may name (E2B's maxItems). */
export const MAX_METRIC_IDS = 100;

/**
 * sandboxIdList reads E2B's `sandbox_ids` (comma-separated, required, at most MAX_METRIC_IDS
 * distinct ids; empty items ignored), or says what is wrong with it.
 */
export function sandboxIdList(
  raw: string | undefined,
): { ok: true; ids: string[] } | { ok: false; message: string } {
  if (raw === undefined)
    return { ok: false, message: "sandbox_ids: is required (comma-separated sandbox IDs)" };
  const ids = [
    ...new Set(
      raw
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
  if (ids.length > MAX_METRIC_IDS)
    return { ok: false, message: `sandbox_ids: too many sandboxes requested, maximum is ${MAX_METRIC_IDS}` };
  return { ok: true, ids };
}
