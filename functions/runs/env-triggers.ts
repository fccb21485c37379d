import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { envsNamingPools, envsUsingTemplates } from "../../lib/membership/env-members.ts";
import type { EnvAuditTargets, EnvKey, PoolKey } from "../../lib/triggers/audit-targets.ts";
import type { ActionOutcome } from "../steps/execute.ts";

/** EnvRun is one Env to run; urgent when it should not wait for the host's spacing of its runs. */
export interface EnvRun {
  key: EnvKey;
  urgent: boolean;
}

/**
 * envsToRun turns an audit batch's Env targets into the Envs to run: those named directly, those
 * with a local member named like a written pool, and those rendering from a written template.
 * A run is urgent when its Env's spec or a member pool itself (not only its status) was written:
 * a host's new pending mark is a create waiting for the autoscaler. Finding them costs one list of
 * Envs from the apiserver's watch cache (all namespaces when a template changed, else each written
 * pool's namespace); a stale list only delays a run to the next trigger or tick, it never makes a
 * wrong write (the run reads afresh).
 */
export async function envsToRun(
  kube: KubeClient,
  targets: EnvAuditTargets,
  clusterId: string,
): Promise<EnvRun[]> {
  const namespaces = [...new Set(targets.pools.map((p) => p.namespace))];
  const lists =
    targets.templates.length > 0
      ? [kube.listEnvs(undefined, { cached: true })]
      : namespaces.map((ns) => kube.listEnvs(ns, { cached: true }));
  return envRuns(
    (await Promise.all(lists)).flatMap((l) => l.items),
    targets,
    clusterId,
  );
}

/** envRuns is envsToRun's decision over the Envs as listed. */
export function envRuns(envs: readonly SandboxEnv[], targets: EnvAuditTargets, clusterId: string): EnvRun[] {
  const urgent = new Set<string>([
    ...targets.envs,
    ...envsNamingPools(
      envs,
      targets.pools.filter((p) => p.urgent),
      clusterId,
    ),
  ]);
  const keys = new Set<string>([
    ...urgent,
    ...envsUsingTemplates(envs, targets.templates),
    ...envsNamingPools(envs, targets.pools, clusterId),
  ]);
  return [...keys].map((key) => ({ key: key as EnvKey, urgent: urgent.has(key) }));
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
