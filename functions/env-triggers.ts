import { envsNamingPools, envsUsingTemplates } from "../lib/env/members.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import type { EnvAuditTargets, EnvKey } from "../lib/triggers/audit-targets.ts";

/**
 * envsToRun turns an audit batch's Env targets into the Envs to run: those named directly, those
 * with a local member named like a written pool, and those rendering from a written template.
 * Finding them costs one list of Envs from the apiserver's watch cache (all namespaces when a
 * template changed, else each written pool's namespace); a stale list only delays a run to the
 * next trigger or tick, it never makes a wrong write (the run reads afresh).
 */
export async function envsToRun(
  kube: KubeClient,
  targets: EnvAuditTargets,
  clusterId: string,
): Promise<EnvKey[]> {
  const keys = new Set<string>(targets.envs);
  const namespaces = [...new Set(targets.pools.map((p) => p.namespace))];
  const lists =
    targets.templates.length > 0
      ? [kube.listEnvs(undefined, { cached: true })]
      : namespaces.map((ns) => kube.listEnvs(ns, { cached: true }));
  const envs = (await Promise.all(lists)).flatMap((l) => l.items);
  for (const key of envsUsingTemplates(envs, targets.templates)) keys.add(key);
  for (const key of envsNamingPools(envs, targets.pools, clusterId)) keys.add(key);
  return [...keys] as EnvKey[];
}
