import type { V1Pod } from "@kubernetes/client-node";
import { ENV_LABEL, SANDBOX_POOL_LABEL } from "../lib/api/keys.ts";
import type { SandboxEnv } from "../lib/api/sandbox-env.ts";
import type { SandboxPool } from "../lib/api/sandbox-pool.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import { isNotFound } from "../lib/kube/errors.ts";

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
  let pool: SandboxPool;
  try {
    pool = await kube.getPool(namespace, name);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
  const pods = await kube.listPods(namespace, `${SANDBOX_POOL_LABEL}=${name}`);
  const envName = pool.metadata?.labels?.[ENV_LABEL];
  const env = envName
    ? await kube
        .getEnv(namespace, envName)
        .catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)))
    : undefined;
  return { pool, pods: pods.items, ...(env ? { env } : {}) };
}
