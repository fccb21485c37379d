// Adoption of legacy pools (opt-in, upstream's poolmigration): a standalone pool, with no Env
// owner and no Env of its name, gets a same-named Env whose one member is the pool's spec, so
// Envs become the one way pools are managed without recreating anything. The Env step then
// attaches the pool (owner reference, labels); its pods are never touched.
import {
  ADOPTED_POOL_ANNOTATION,
  API_VERSION,
  ENV_LABEL,
  KIND,
  POOL_TEMPLATE_NAME_ANNOTATION,
} from "../crd/keys.ts";
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { type Action, envTarget, isTerminating } from "../kube/action.ts";
import { hasEnvOwner } from "../membership/env-ownership.ts";

/** adoptionEnv is the Env that adopts a pool: its name, the pool's spec as the one local member. */
export function adoptionEnv(pool: SandboxPool, clusterId: string): SandboxEnv {
  const name = pool.metadata?.name ?? "";
  return {
    apiVersion: API_VERSION,
    kind: KIND.SANDBOX_ENV,
    metadata: {
      name,
      namespace: pool.metadata?.namespace ?? "",
      annotations: { [ADOPTED_POOL_ANNOTATION]: pool.metadata?.uid ?? "" },
    },
    spec: {
      templateRef: {
        name: pool.spec.templateName ?? pool.metadata?.annotations?.[POOL_TEMPLATE_NAME_ANNOTATION] ?? "",
      },
      mode: "WarmPool",
      // An empty scaling group keeps the adopted pool out of autoscaling: its replicas stay as set.
      clusters: [
        { clusterID: clusterId, members: [{ name, spec: pool.spec, config: { scalingGroup: "" } }] },
      ],
    },
  };
}

/**
 * planAdoption creates an Env for every standalone pool that has none: not being deleted, no Env
 * owner, no Env label, and no Env of its name in its namespace (an Env of that name that did not
 * adopt it would only report the pool as Inconsistent, never take it). Deterministic names make
 * racing runs create it once.
 */
export function planAdoption(
  pools: readonly SandboxPool[],
  envs: readonly SandboxEnv[],
  clusterId: string,
): Action[] {
  const envKeys = new Set(envs.map((e) => `${e.metadata?.namespace}/${e.metadata?.name}`));
  return pools
    .filter(
      (pool) =>
        !isTerminating(pool) &&
        !hasEnvOwner(pool) &&
        !pool.metadata?.labels?.[ENV_LABEL] &&
        !envKeys.has(`${pool.metadata?.namespace}/${pool.metadata?.name}`),
    )
    .map((pool) => {
      const env = adoptionEnv(pool, clusterId);
      return {
        target: envTarget(env),
        why: "adopt a standalone pool into a same-named Env",
        write: { op: "create", object: env },
        event: {
          type: "Normal",
          reason: "AdoptingPool",
          action: "Adopt",
          note: `created to adopt the standalone SandboxPool "${env.metadata?.name}"`,
        },
      } satisfies Action;
    });
}
