import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { type HostConfig, startHost } from "../hosts/node/host.ts";
import { installCrds, registerWebhooks } from "../infra/cluster/install.ts";
import type { ClusterState } from "../infra/cluster/state.ts";
import type { Log } from "../lib/log.ts";

/** quiet is a Log that drops everything (benchmarks report figures, not logs). */
export const quiet: Log = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * benchHost installs the CRDs on a benchmark cluster and runs the real Node host against it, with
 * the webhooks registered; `options` adjusts the host (tick, audit filter).
 */
export async function benchHost(state: ClusterState, options: Partial<HostConfig> = {}) {
  const kc = new KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  await installCrds(kc);
  const host = await startHost({
    kubeconfig: kc,
    callbackToken: readFileSync(state.callbackTokenFile, "utf8").trim(),
    adminToken: randomBytes(16).toString("hex"),
    historyPath: join(state.dir, "bench-history.sqlite"),
    listen: {
      host: "127.0.0.1",
      port: state.hostPort,
      certFile: state.webhookCert,
      keyFile: state.webhookKey,
    },
    tickSeconds: 0,
    tickConcurrency: 8,
    log: quiet,
    ...options,
  });
  await registerWebhooks(kc, `https://127.0.0.1:${state.hostPort}`, state.caCert);
  return { kc, host };
}

/** waitFor polls check (errors count as "not yet") until it holds or the deadline passes. */
export async function waitFor(check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("timed out");
}

/** percentile is the p-th percentile of xs (nearest rank). */
export function percentile(xs: readonly number[], p: number): number {
  return [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? 0;
}

/**
 * cpuSeconds reads the CPU time (user + system) each process has used so far, from
 * /proc/<pid>/stat (clock ticks of 10 ms); the bench process reports its own as "bench+host".
 * Two readings around a phase say which process the phase kept busy.
 */
export function cpuSeconds(processes: readonly { name: string; pid: number }[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of processes) {
    try {
      const fields = readFileSync(`/proc/${p.pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
      out[p.name] = (Number(fields[11]) + Number(fields[12])) / 100;
    } catch {
      out[p.name] = Number.NaN;
    }
  }
  const self = process.cpuUsage();
  out["bench+host"] = (self.user + self.system) / 1e6;
  return out;
}

/** cpuTable prints the CPU seconds each process used between two cpuSeconds readings. */
export function cpuTable(
  title: string,
  before: Record<string, number>,
  after: Record<string, number>,
  wallSeconds: number,
): string {
  const rows = Object.keys(after)
    .map((k) => [k, (after[k] ?? 0) - (before[k] ?? 0)] as const)
    .sort((a, b) => b[1] - a[1]);
  const lines = [`| ${title} | CPU s | share of 2 cores |`, "| --- | --- | --- |"];
  for (const [k, s] of rows)
    lines.push(`| ${k} | ${s.toFixed(2)} | ${((100 * s) / (2 * wallSeconds)).toFixed(0)} % |`);
  return lines.join("\n");
}
