// The kubelet's /metrics/resource text (and kwok's simulation of it) read into container figures.
import type { ContainerUsage } from "./sample.ts";

/**
 * RESOURCE_METRICS_ANNOTATION on a Node says where its resource metrics are read when its kubelet
 * serves no summary API (a kwok node): `<proxy node name>/<path>`, read as
 * `GET /api/v1/nodes/<proxy node name>/proxy/<path>`. The proxy node name may carry a scheme and
 * port (`http:kwok-node-0:10247`), so the apiserver reaches a server other than the kubelet's port.
 */
export const RESOURCE_METRICS_ANNOTATION = "agentbox.navix.sh/resource-metrics";

/**
 * SOURCE_PROXY is what the annotation's proxy node may be: a node name (a DNS subdomain: no dot
 * segment such as `..`), with an optional scheme and port.
 */
const SOURCE_PROXY = /^(?:https?:)?[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?(?::\d{1,5})?$/;

/**
 * SOURCE_PATH is what the annotation's path may be: under `metrics/`, plain segments only (no
 * `%`, `?`, `#`, backslash or empty segment), dot segments refused apart (see resourceMetricsSource).
 */
const SOURCE_PATH = /^metrics\/[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)*$/;

/** ResourceMetricsSource is where a node's resource metrics are read, or why its annotation is refused. */
export type ResourceMetricsSource = { ok: true; proxy: string; path: string } | { ok: false; error: string };

/**
 * resourceMetricsSource reads a RESOURCE_METRICS_ANNOTATION value. The value is written on the
 * Node, which its own kubelet may edit, and the controller GETs it with its own identity: a path
 * that escaped the node proxy (`metrics/../../../../apis/...`, resolved by URL parsing) would
 * make the controller read any API path for the node (a confused deputy). So both parts are
 * pinned to the shapes the sources use (kwok: `http:<node>:<port>/metrics/nodes/<node>/metrics/
 * resource`), and anything else is refused, never repaired.
 */
export function resourceMetricsSource(value: string): ResourceMetricsSource {
  const slash = value.indexOf("/");
  const proxy = value.slice(0, Math.max(0, slash));
  const path = value.slice(slash + 1);
  const refused = (why: string): ResourceMetricsSource => ({
    ok: false,
    error: `${RESOURCE_METRICS_ANNOTATION}: ${JSON.stringify(value.slice(0, 200))} ${why}`,
  });
  if (slash <= 0 || !SOURCE_PROXY.test(proxy)) return refused("is not <proxy node>/<path>");
  if (!SOURCE_PATH.test(path) || path.split("/").some((s) => s === "." || s === ".."))
    return refused("has a path outside metrics/ or with a dot segment");
  return { ok: true, proxy, path };
}

/** The three container metrics of the kubelet's resource metrics that a sample needs. */
const CPU = "container_cpu_usage_seconds_total";
const MEMORY = "container_memory_working_set_bytes";
const START = "container_start_time_seconds";

/** A sample line: its name, labels, value and the optional timestamp in ms since the epoch. */
interface Line {
  name: string;
  labels: Map<string, string>;
  value: number;
  ms?: number;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const SPECIAL = /^(?:[+-]?inf(?:inity)?|nan)$/i;
const TIMESTAMP = /^-?\d{1,16}$/;
/** The largest |ms| a Date holds (±100,000,000 days). */
const MAX_DATE_MS = 8.64e15;
const ESCAPES: Record<string, string> = { "\\": "\\", '"': '"', n: "\n" };

/** parseValue reads a sample value as the text format writes them (decimal, ±Inf, NaN); undefined when it is none. */
function parseValue(token: string): number | undefined {
  if (DECIMAL.test(token)) return Number(token);
  if (!SPECIAL.test(token)) return undefined;
  return /nan/i.test(token) ? Number.NaN : token.startsWith("-") ? -Infinity : Infinity;
}

/**
 * parseLine reads one sample line of the Prometheus text exposition format, or undefined when
 * the line breaks it: a bad name, label or escape, a missing or unreadable value, a timestamp
 * that is not whole milliseconds, or anything after the timestamp.
 */
function parseLine(line: string): Line | undefined {
  const name = METRIC_NAME.exec(line)?.[0];
  if (!name) return undefined;
  let i = name.length;
  const skip = () => {
    while (line[i] === " " || line[i] === "\t") i++;
  };
  const labels = new Map<string, string>();
  skip();
  const labelled = line[i] === "{";
  if (labelled) {
    i++;
    for (;;) {
      skip();
      if (line[i] === "}") break;
      const label = LABEL_NAME.exec(line.slice(i))?.[0];
      if (!label || labels.has(label)) return undefined;
      i += label.length;
      skip();
      if (line[i++] !== "=") return undefined;
      skip();
      if (line[i++] !== '"') return undefined;
      let value = "";
      for (;;) {
        const c = line[i++];
        if (c === undefined) return undefined;
        if (c === '"') break;
        if (c === "\\") {
          const escaped = ESCAPES[line[i++] ?? ""];
          if (escaped === undefined) return undefined;
          value += escaped;
        } else value += c;
      }
      labels.set(label, value);
      skip();
      if (line[i] === ",") i++;
      else if (line[i] !== "}") return undefined;
    }
    i++;
  }
  // A value follows the labels at once or after blanks, but a bare name only after blanks.
  if (!labelled && i === name.length) return undefined;
  const tokens = line
    .slice(i)
    .trim()
    .split(/[ \t]+/);
  if (tokens.length > 2) return undefined;
  const value = parseValue(tokens[0] ?? "");
  if (value === undefined) return undefined;
  const stamp = tokens[1];
  if (stamp === undefined) return { name, labels, value };
  const ms = TIMESTAMP.test(stamp) ? Number(stamp) : Number.NaN;
  return Math.abs(ms) <= MAX_DATE_MS ? { name, labels, value, ms } : undefined;
}

/** A container's figures while its lines are read. */
interface Reading {
  usage: ContainerUsage;
  cpuMs?: number;
  memoryMs?: number;
  /** started: the start time line's value in seconds, when there was one. */
  started?: number;
}

/** figure is a finite, non-negative value, or undefined (NaN, ±Inf and negatives say nothing). */
const figure = (v: number) => (Number.isFinite(v) && v >= 0 ? v : undefined);

/**
 * parseResourceMetrics reads the kubelet's resource metrics (`/metrics/resource`, the Prometheus
 * text format; kwok serves the same names, see infra/kwok/resource-usage.yaml) into one
 * ContainerUsage per container: cumulative CPU core-seconds, the memory working set, and the
 * container's start time. `at` is when the text was read; a figure's own timestamp, when the
 * line has one, is more exact (the kubelet stamps each with its stats' time), so the CPU line's
 * wins, then the memory line's. Lines that break the format, other metrics, lines without the
 * container/namespace/pod labels, and NaN, infinite or negative figures are skipped, never a
 * made-up zero and never a failure of the whole read: one bad line costs one figure. A container
 * whose start time is 0 has not started (kwok says so for a pod that is not running) and is left
 * out, as the kubelet leaves out containers that do not run. Of two lines of one figure for one
 * container, the later counts.
 */
export function parseResourceMetrics(text: string, at: string): ContainerUsage[] {
  const readings = new Map<string, Reading>();
  for (const raw of text.split("\n")) {
    const trimmed = raw.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const line = parseLine(trimmed);
    if (!line || (line.name !== CPU && line.name !== MEMORY && line.name !== START)) continue;
    const namespace = line.labels.get("namespace");
    const pod = line.labels.get("pod");
    const container = line.labels.get("container");
    if (!namespace || !pod || !container) continue;
    const key = JSON.stringify([namespace, pod, container]);
    let r = readings.get(key);
    if (!r) {
      r = { usage: { namespace, pod, container, at } };
      readings.set(key, r);
    }
    if (line.name === CPU) {
      r.usage.cpuCoreSeconds = figure(line.value);
      r.cpuMs = line.ms;
    } else if (line.name === MEMORY) {
      r.usage.memoryWorkingSetBytes = figure(line.value);
      r.memoryMs = line.ms;
    } else r.started = line.value;
  }
  const out: ContainerUsage[] = [];
  for (const r of readings.values()) {
    if (r.started !== undefined && r.started <= 0) continue;
    const startMs = r.started === undefined ? Number.NaN : r.started * 1000;
    if (Math.abs(startMs) <= MAX_DATE_MS) r.usage.startTime = new Date(startMs).toISOString();
    const ms = r.cpuMs ?? r.memoryMs;
    if (ms !== undefined) r.usage.at = new Date(ms).toISOString();
    out.push(r.usage);
  }
  return out;
}
