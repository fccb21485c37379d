import type { V1Pod } from "@kubernetes/client-node";
import { ENV_LABEL, SANDBOX_POOL_LABEL } from "../lib/api/keys.ts";
import type { SandboxEnv } from "../lib/api/sandbox-env.ts";
import type { SandboxPool } from "../lib/api/sandbox-pool.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import { orMissing } from "../lib/kube/errors.ts";

/** PoolSnapshot is one fresh read of a pool, its pods (terminating ones too) and its Env. */
export interface PoolSnapshot {
  pool: SandboxPool;
  pods: V1Pod[];
  env?: SandboxEnv;
}

/**
 * readSnapshot reads the pool and its pods straight from the API server (two requests; a third
 * when the pool belongs to an Env). Undefined when the pool does not exist (any more).
 */
export async function readSnapshot(
  kube: KubeClient,
  namespace: string,
  name: string,
): Promise<PoolSnapshot | undefined> {
  const pool = await orMissing(kube.getPool(namespace, name));
  if (!pool) return undefined;
  const pods = await kube.listPods(namespace, `${SANDBOX_POOL_LABEL}=${name}`);
  const envName = pool.metadata?.labels?.[ENV_LABEL];
  const env = envName ? await orMissing(kube.getEnv(namespace, envName)) : undefined;
  return { pool, pods: pods.items, ...(env ? { env } : {}) };
}

/**
 * readAllSnapshots reads every pool, every pool pod and (when some pool belongs to an Env) every
 * Env, of one namespace when given, else of the cluster, in at most three list requests, grouped
 * per pool. A tick uses it instead of two reads per
 * pool: the apiserver filters label selectors by scanning, so one list of all sandbox pods costs
 * far less than a list per pool. The snapshot is as fresh as the tick, and every write still
 * carries its own precondition.
 */
export async function readAllSnapshots(
  kube: KubeClient,
  namespace?: string,
): Promise<Map<string, PoolSnapshot>> {
  const pools = (await kube.listPools(namespace)).items;
  const pods = (await kube.listPods(namespace, SANDBOX_POOL_LABEL)).items;
  const envs = pools.some((p) => p.metadata?.labels?.[ENV_LABEL])
    ? (await kube.listEnvs(namespace)).items
    : [];
  const snapshots = new Map<string, PoolSnapshot>();
  for (const pool of pools)
    snapshots.set(`${pool.metadata?.namespace}/${pool.metadata?.name}`, { pool, pods: [] });
  for (const pod of pods) {
    snapshots.get(`${pod.metadata?.namespace}/${pod.metadata?.labels?.[SANDBOX_POOL_LABEL]}`)?.pods.push(pod);
  }
  for (const snap of snapshots.values()) {
    const envName = snap.pool.metadata?.labels?.[ENV_LABEL];
    const env = envs.find(
      (e) => e.metadata?.namespace === snap.pool.metadata?.namespace && e.metadata?.name === envName,
    );
    if (envName && env) snap.env = env;
  }
  return snapshots;
}
