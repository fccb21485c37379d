import type { V1Pod } from "@kubernetes/client-node";
import { ENV_LABEL } from "../crd/keys.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { countPods } from "../pool/pool-status.ts";
import { podRevision } from "../pool/render-pod.ts";
import { rolloutFacts } from "../pool/rollout.ts";
import type { Metrics, PoolLabels, PoolPhase } from "./metrics.ts";

/**
 * poolGauges is what agentbox's pool gauges say of one pool snapshot: its labels (namespace,
 * name, the Env that renders it or "") and each phase's count, counted as the pool's status
 * counts them (terminating pods left out); desired is spec.replicas, outdated the pods of an
 * older pod revision (a rollout replaces them).
 */
export function poolGauges(
  pool: SandboxPool,
  pods: readonly V1Pod[],
): { labels: PoolLabels; values: Record<PoolPhase, number> } {
  const c = countPods(pods);
  return {
    labels: {
      namespace: pool.metadata?.namespace ?? "",
      pool: pool.metadata?.name ?? "",
      sandbox_env: pool.metadata?.labels?.[ENV_LABEL] ?? "",
    },
    values: {
      desired: pool.spec.replicas ?? 0,
      idle: c.idle,
      running: c.running,
      starting: c.starting,
      stopping: c.stopping,
      failed: c.failed,
      outdated: rolloutFacts(pool, pods, podRevision(pool)).outdated,
    },
  };
}

/**
 * setPoolGauges writes one pool's gauges ("namespace/name"), and drops its series when the pool
 * is gone (gauges undefined). metrics.poolSeries remembers each pool's labels, so a pool that
 * moved to another Env or was deleted leaves no stale series behind.
 */
export function setPoolGauges(
  metrics: Metrics,
  key: string,
  gauges: ReturnType<typeof poolGauges> | undefined,
): void {
  const seen = metrics.poolSeries;
  const before = seen.get(key);
  const same = before && gauges && JSON.stringify(before) === JSON.stringify(gauges.labels);
  if (before && !same) for (const g of Object.values(metrics.poolReplicas)) g.remove(before);
  if (!gauges) {
    seen.delete(key);
    return;
  }
  seen.set(key, gauges.labels);
  for (const [phase, value] of Object.entries(gauges.values))
    metrics.poolReplicas[phase as PoolPhase].set(gauges.labels, value);
}
