import type { V1Pod } from "@kubernetes/client-node";
import { autoscaledMembers } from "../../lib/autoscale/plan-autoscale.ts";
import { envImagePullSecretName, IMAGE_PULL_SECRET_TYPE, SANDBOX_POOL_LABEL } from "../../lib/crd/keys.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import { namesInstanceType } from "../../lib/env/instance-sizing.ts";
import type { InstanceTypeCatalog } from "../../lib/env/instance-types.ts";
import type { EnvSnapshot } from "../../lib/env/plan-env.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import { indexPools, poolsOfEnv } from "../../lib/membership/env-members.ts";

/**
 * readEnvSnapshot reads an Env and what its run decides from, straight from the API server: the
 * Env, then side by side the pools of its namespace, its template and whether its pull Secret
 * (a dockerconfigjson Secret named ips-<env>) exists, read as metadata only, and, when the Env
 * autoscales members, their Pods (one list): four or five requests. Undefined when the Env does
 * not exist (any more).
 */
export async function readEnvSnapshot(
  kube: KubeClient,
  namespace: string,
  name: string,
  clusterId: string,
): Promise<EnvSnapshot | undefined> {
  const env = await orMissing(kube.getEnv(namespace, name));
  if (!env) return undefined;
  const templateName = env.spec.templateRef.name;
  const scaled = autoscaledMembers(env, clusterId);
  const [pools, template, pullSecret, pods] = await Promise.all([
    kube.listPools(namespace),
    templateName ? orMissing(kube.getTemplate(templateName)) : Promise.resolve(undefined),
    kube.secretNames(namespace, IMAGE_PULL_SECRET_TYPE, envImagePullSecretName(name)),
    scaled.length > 0
      ? kube.listPods(namespace, `${SANDBOX_POOL_LABEL} in (${scaled.join(",")})`).then((l) => l.items)
      : Promise.resolve([]),
  ]);
  return {
    env,
    pools: poolsOfEnv(env, indexPools(pools.items), clusterId),
    template: template ?? null,
    pullSecret: pullSecret.length > 0,
    pods,
  };
}

/**
 * envSnapshotsFrom builds every Env's snapshot from lists a tick already made (Envs, pools,
 * templates, the names of the dockerconfigjson Secrets, the pool Pods by "namespace/pool", and
 * the instance type catalog when it was read: null when its ConfigMap does not exist): no request
 * per Env.
 */
export function envSnapshotsFrom(
  lists: {
    envs: readonly EnvSnapshot["env"][];
    pools: readonly EnvSnapshot["pools"][number][];
    templates: ReadonlyMap<string, SandboxTemplate>;
    pullSecrets: ReadonlySet<string>;
    podsByPool: ReadonlyMap<string, readonly V1Pod[]>;
    catalog?: InstanceTypeCatalog | null | undefined;
  },
  clusterId: string,
): EnvSnapshot[] {
  const index = indexPools(lists.pools);
  return lists.envs.map((env) => {
    const ns = env.metadata?.namespace ?? "";
    return {
      env,
      pools: poolsOfEnv(env, index, clusterId),
      template: lists.templates.get(env.spec.templateRef.name) ?? null,
      pullSecret: lists.pullSecrets.has(`${ns}/${envImagePullSecretName(env.metadata?.name ?? "")}`),
      pods: autoscaledMembers(env, clusterId).flatMap((m) => lists.podsByPool.get(`${ns}/${m}`) ?? []),
      ...(lists.catalog !== undefined && namesInstanceType(env) ? { catalog: lists.catalog } : {}),
    };
  });
}
