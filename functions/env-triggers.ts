import { envsNamingPools, envsUsingTemplates } from "../lib/env/members.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import type { EnvAuditTargets, EnvKey, PoolKey } from "../lib/triggers/audit-targets.ts";
import type { ActionOutcome } from "./execute.ts";

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

/**
 * poolsSpecWritten are the pools whose spec (or existence) an Env run just wrote: a new member, a
 * drift patched back, replicas the autoscaler raised. Their pool runs should start at once, not
 * after the host's spacing of whole-pool runs: a waiting create needs the pods those replicas
 * order. Status writes (the autoscaler's bookkeeping) are not among them.
 */
export function poolsSpecWritten(outcomes: readonly ActionOutcome[]): PoolKey[] {
  const keys = new Set<PoolKey>();
  for (const o of outcomes) {
    const [kind, namespace, name] = o.target.split("/");
    if (kind === "SandboxPool" && o.result === "done" && (o.op === "patch" || o.op === "create"))
      keys.add(`${namespace}/${name}`);
  }
  return [...keys];
}
