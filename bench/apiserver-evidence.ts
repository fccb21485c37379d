// Evidence of what a benchmark phase cost the apiserver: its own request counter and its CPU
// profile, read over the admin connection (Go's pprof endpoint, bucketed with `go tool pprof`).
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { growth, type Send } from "./support.ts";

/**
 * requestCounts reads the apiserver's own request counter (apiserver_request_total) as
 * "VERB resource[/subresource] code" → count: every client's requests (ours, kwok's, the
 * controllers'), so two readings around a phase say what the phase cost the apiserver.
 */
export async function requestCounts(admin: Send): Promise<Map<string, number>> {
  const text = (await admin("GET", "/metrics")).body;
  const counts = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line.startsWith("apiserver_request_total{")) continue;
    const labels = Object.fromEntries(
      [...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1] ?? "", m[2] ?? ""] as const),
    );
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    const resource = labels.subresource ? `${labels.resource}/${labels.subresource}` : labels.resource;
    const key = `${labels.verb} ${resource || "(none)"} ${labels.code}`;
    counts.set(key, (counts.get(key) ?? 0) + value);
  }
  return counts;
}

/**
 * requestTable prints the requests the apiserver served between two requestCounts readings,
 * per unit of work (`per`, e.g. per claim), largest first, leaving out what rounds to nothing.
 */
export function requestTable(
  title: string,
  before: Map<string, number>,
  after: Map<string, number>,
  per: number,
): string {
  const rows = growth(before, after)
    .map(([k, v]) => [k, v / per] as const)
    .filter(([, v]) => v >= 0.01);
  const lines = [`| ${title} | per unit |`, "| --- | --- |"];
  for (const [k, v] of rows) lines.push(`| ${k} | ${v.toFixed(2)} |`);
  return lines.join("\n");
}

/**
 * PROFILE_BUCKETS name where a kube-apiserver spends CPU, by functions on the stack (summed when
 * several). Buckets overlap (an update's field tracking is part of the update); each is a share
 * of all samples.
 */
const PROFILE_BUCKETS: readonly [string, string[]][] = [
  ["writes: GuaranteedUpdate (patch, update)", ["storage/etcd3.(*store).GuaranteedUpdate"]],
  ["  of which managedFields tracking", ["managedfields/internal.(*FieldManager).Update"]],
  ["creates", ["handlers.CreateResource.func1"]],
  ["gets", ["handlers.GetResource.func1"]],
  ["lists", ["handlers.ListResource.func1"]],
  ["watch fan-out to watchers", ["cacher.(*cacheWatcher).processInterval"]],
  ["audit webhook (encode + send)", ["audit/webhook.(*backend).processEvents"]],
  ["response encoding", ["handlers.transformResponseObject"]],
  ["TLS reads and writes", ["crypto/tls.(*Conn).Write", "crypto/tls.(*Conn).Read"]],
  ["garbage collection", ["runtime.gcBgMarkWorker"]],
];

/**
 * cpuProfile records the apiserver's CPU profile for `seconds` (Go's pprof endpoint) and writes
 * it to file; profileSummary then tells which parts of the apiserver the samples fall in.
 */
export async function cpuProfile(admin: Send, seconds: number, file: string): Promise<void> {
  const res = await admin("GET", `/debug/pprof/profile?seconds=${seconds}`);
  if (res.status !== 200) throw new Error(`pprof: HTTP ${res.status}`);
  writeFileSync(file, res.bytes);
}

/** profileSummary buckets a CPU profile with `go tool pprof` (Go builds the control plane, so it is here). */
export function profileSummary(file: string): string {
  const top = execFileSync("go", ["tool", "pprof", "-top", "-cum", "-nodecount=2000", file], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
    maxBuffer: 64 * 1024 * 1024,
  });
  const sampled = /Total samples = ([\d.]+)(m?)s/.exec(top);
  const total = Number(sampled?.[1] ?? Number.NaN) * (sampled?.[2] === "m" ? 0.001 : 1);
  if (!(total > 0)) return "(the profile holds no samples)";
  // Rows: flat flat% sum% cum cum% function; the first row of a function is its cumulative time.
  const cum = new Map<string, number>();
  for (const row of top.split("\n")) {
    const f = row.trim().split(/\s+/);
    const name = f.slice(5).join(" ").replace(" (inline)", "");
    const v = f[3];
    if (name && v && !cum.has(name)) cum.set(name, Number.parseFloat(v) * (v.endsWith("ms") ? 0.001 : 1));
  }
  const seconds = (fn: string) => {
    for (const [name, v] of cum) if (name.endsWith(fn)) return v;
    return 0;
  };
  const lines = [`| apiserver CPU (profile, ${total.toFixed(1)} s of samples) | share |`, "| --- | --- |"];
  for (const [label, fns] of PROFILE_BUCKETS) {
    const sum = fns.reduce((acc, fn) => acc + seconds(fn), 0);
    lines.push(`| ${label} | ${((100 * sum) / total).toFixed(0)} % |`);
  }
  return lines.join("\n");
}
