import { poolSummary } from "../claims/target-summaries.ts";
import { ENV_LABEL } from "../crd/keys.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { POOL_PHASES, type PoolPhase, poolGaugeHelp } from "./pool-phases.ts";

/** EXPOSITION_CONTENT_TYPE is Prometheus's text format, version 0.0.4. */
export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** escapeLabel escapes a label value as the text format asks: backslash, double quote, newline. */
const escapeLabel = (value: string) =>
  value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");

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
    lines.push(`# HELP ${name} ${poolGaugeHelp(phase, "as its status counts them")}`, `# TYPE ${name} gauge`);
    for (const p of pools) {
      const labels = [
        ["namespace", p.metadata?.namespace ?? ""],
        ["pool", p.metadata?.name ?? ""],
        ["sandbox_env", p.metadata?.labels?.[ENV_LABEL] ?? ""],
      ]
        .map(([k, v]) => `${k}="${escapeLabel(v ?? "")}"`)
        .join(",");
      lines.push(`${name}{${labels}} ${gaugeValue(p, phase)}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

/** gaugeValue is one pool's value of a pool gauge, from its spec and status. */
function gaugeValue(pool: SandboxPool, phase: PoolPhase): number {
  return phase === "outdated" ? (pool.status?.outdatedReplicas ?? 0) : poolSummary(pool)[phase];
}
