import { ENV_LABEL } from "../api/keys.ts";
import type { SandboxPool } from "../api/sandbox-pool.ts";
import { POOL_PHASES, type PoolPhase } from "./pool-phases.ts";

/** EXPOSITION_CONTENT_TYPE is Prometheus's text format, version 0.0.4. */
export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** escapeLabel escapes a label value as the text format asks: backslash, double quote, newline. */
const escapeLabel = (value: string) =>
  value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");

/** fromStatus is each pool gauge's value as the pool's status last counted it (desired: spec). */
function fromStatus(p: SandboxPool): Record<PoolPhase, number> {
  const s = p.status;
  return {
    desired: p.spec.replicas ?? 0,
    idle: s?.idleReplicas ?? 0,
    running: s?.runningReplicas ?? 0,
    starting: s?.startingReplicas ?? 0,
    stopping: s?.stoppingReplicas ?? 0,
    failed: s?.failedReplicas ?? 0,
  };
}

/**
 * poolExposition writes agentbox's pool gauges for `pools` in the Prometheus text format, from
 * their statuses. The Worker serves it: prom-client needs Node's runtime (cluster, v8), which a
 * Worker does not have, and a Worker keeps no instruments between requests anyway, so one list
 * of pools per scrape is the whole state. Same names and labels as the Node host's gauges.
 */
export function poolExposition(pools: readonly SandboxPool[]): string {
  const lines: string[] = [];
  for (const phase of POOL_PHASES) {
    const name = `agentbox_sandboxpool_replicas_${phase}`;
    lines.push(
      `# HELP ${name} ${phase === "desired" ? "Pods the pool asks for (spec.replicas)." : `Pods of the pool in phase ${phase}, as its status counts them.`}`,
      `# TYPE ${name} gauge`,
    );
    for (const p of pools) {
      const labels = [
        ["namespace", p.metadata?.namespace ?? ""],
        ["pool", p.metadata?.name ?? ""],
        ["sandbox_env", p.metadata?.labels?.[ENV_LABEL] ?? ""],
      ]
        .map(([k, v]) => `${k}="${escapeLabel(v ?? "")}"`)
        .join(",");
      lines.push(`${name}{${labels}} ${fromStatus(p)[phase]}`);
    }
  }
  return `${lines.join("\n")}\n`;
}
