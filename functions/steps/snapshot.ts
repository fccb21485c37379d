import type { V1Pod } from "@kubernetes/client-node";
import { ENV_LABEL, IMAGE_PULL_SECRET_TYPE, SANDBOX_POOL_LABEL } from "../../lib/crd/keys.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import { namesInstanceType } from "../../lib/env/instance-sizing.ts";
import type { InstanceTypeCatalog } from "../../lib/env/instance-types.ts";
import type { EnvSnapshot } from "../../lib/env/plan-env.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import { orphanedFrom, partitionPods } from "../../lib/membership/pod-ownership.ts";
import { templateCopyNeeded } from "../../lib/pool/template-copy.ts";
import { envSnapshotsFrom } from "./env-snapshot.ts";

/**
 * PoolSnapshot is one fresh read of a pool, its pods (terminating ones too) and its Env. `pods`
 * are the pool's own (ownedBy): every step plans from those alone, so a pod that only carries
 * the pool label is never claimed, counted, changed, finalized or deleted.
 */
export interface PoolSnapshot {
  pool: SandboxPool;
  pods: V1Pod[];
  /** foreign are the pods listed with the pool's label that it does not own (see partitionPods). */
  foreign?: V1Pod[];
  /** waiter: the caller is the create that waits for these pods to run (ADR 0022). */
  waiter?: boolean;
  env?: SandboxEnv;
  /**
   * template is the template a pool names (spec.templateName), or null when it does not exist:
   * the copy a pool waits for (templateCopyNeeded) is made from it, and the status says whether
   * it still exists (TemplateAvailable). Absent for a pool that names none.
   */
  template?: SandboxTemplate | null;
}

/**
 * readSnapshot reads the pool and its pods straight from the API server (two requests; one more
 * when the pool belongs to an Env, and one when it names a template). Undefined when the pool does
 * not exist (any more). `viewed`, when given, are the pool's pods from a watch-fed view (a host's
 * PoolPodsView) that has seen what triggered the run: they stand in for the list, which on a pool
 * of 1,000 pods is most of what a run costs the apiserver and the host (ADR 0039).
 */
export async function readSnapshot(
  kube: KubeClient,
  namespace: string,
  name: string,
  viewed?: readonly V1Pod[],
): Promise<PoolSnapshot | undefined> {
  const pool = await orMissing(kube.getPool(namespace, name));
  if (!pool) return undefined;
  const pods = viewed
    ? { items: [...viewed] }
    : await kube.listPods(namespace, `${SANDBOX_POOL_LABEL}=${name}`);
  const envName = pool.metadata?.labels?.[ENV_LABEL];
  const env = envName ? await orMissing(kube.getEnv(namespace, envName)) : undefined;
  // From etcd for a copy still to make; else from the watch cache (the status only says whether
  // it exists).
  const templateName = pool.spec.templateName;
  const template = templateName
    ? ((await orMissing(kube.getTemplate(templateName, templateCopyNeeded(pool) ? {} : { cached: true }))) ??
      null)
    : undefined;
  const { owned, foreign } = partitionPods(pool, pods.items);
  return {
    pool,
    pods: owned,
    ...(foreign.length > 0 ? { foreign } : {}),
    ...(env ? { env } : {}),
    ...(template !== undefined ? { template } : {}),
  };
}

/** ClusterSnapshot is one tick's read of everything: pools with their pods, and Envs. */
export interface ClusterSnapshot {
  /** pools by "namespace/name", each with its pods, its Env and (when it names one) its template. */
  pools: Map<string, PoolSnapshot>;
  /** envs are every Env with what its run needs (empty when no local cluster ID is configured). */
  envs: EnvSnapshot[];
  /** allEnvs are the Envs as listed, for adoption and the scale-down policy of member pools. */
  allEnvs: SandboxEnv[];
  /**
   * templates are the cluster's templates when they were listed (Envs to reconcile, or a pool
   * naming one), for their status; undefined when they were not.
   */
  templates?: SandboxTemplate[];
  /**
   * orphans are pool pods whose pool is gone (orphanedFrom): created by a pool that no longer
   * exists, so no pool run will ever let them go when they are deleted.
   */
  orphans: V1Pod[];
}

/**
 * readCluster reads every pool, every pool pod and every Env of one namespace when given, else of
 * the cluster (each pool with the pods it owns, and the orphans of pools that are gone), in a
 * fixed number of list requests (at most five, whatever the number of pools and Envs): pools,
 * pods and Envs; templates when Envs are reconciled or a pool names one;
 * the names of the dockerconfigjson Secrets (metadata only) when Envs are reconciled; and one
 * read of the instance type catalog (`readCatalog`) when an Env names an instance type. A tick uses
 * it instead of reads per pool or Env: the apiserver filters label selectors by scanning, so one
 * list of all sandbox pods costs far less than a list per pool. The snapshot is as fresh as the
 * tick, and every write still carries its own precondition. `viewed`, when given, are the pool
 * pods a watch-fed view holds (the tick's PoolPodsView): they stand in for the list of pods.
 */
export async function readCluster(
  kube: KubeClient,
  namespace: string | undefined,
  clusterId: string | undefined,
  readCatalog?: () => Promise<InstanceTypeCatalog | undefined>,
  viewed?: readonly V1Pod[],
): Promise<ClusterSnapshot> {
  const [pools, pods, envs] = await Promise.all([
    kube.listPools(namespace).then((l) => l.items),
    viewed ?? kube.listPods(namespace, SANDBOX_POOL_LABEL).then((l) => l.items),
    kube.listEnvs(namespace).then((l) => l.items),
  ]);
  const reconcileEnvs = clusterId !== undefined && envs.length > 0;
  const needTemplates = reconcileEnvs || pools.some((p) => p.spec.templateName);
  // The catalog once for every Env that names an instance type; unread (a failed read), each
  // such Env's run reads it itself, so a catalog that cannot be read fails those runs only.
  const sized = reconcileEnvs && readCatalog !== undefined && envs.some(namesInstanceType);
  const [templateList, secretNames, catalog] = await Promise.all([
    needTemplates ? kube.listTemplates().then((l) => l.items) : Promise.resolve([]),
    reconcileEnvs ? kube.secretNames(namespace, IMAGE_PULL_SECRET_TYPE) : Promise.resolve([]),
    sized && readCatalog
      ? readCatalog().then(
          (c) => c ?? null,
          () => undefined,
        )
      : Promise.resolve(undefined),
  ]);
  const templates = new Map(templateList.map((t) => [t.metadata?.name ?? "", t]));
  const envByKey = new Map(envs.map((e) => [`${e.metadata?.namespace}/${e.metadata?.name}`, e]));
  const snapshots = new Map<string, PoolSnapshot>();
  for (const pool of pools) {
    const snap: PoolSnapshot = { pool, pods: [] };
    if (pool.spec.templateName) snap.template = templates.get(pool.spec.templateName) ?? null;
    const envName = pool.metadata?.labels?.[ENV_LABEL];
    const env = envName ? envByKey.get(`${pool.metadata?.namespace}/${envName}`) : undefined;
    if (env) snap.env = env;
    snapshots.set(`${pool.metadata?.namespace}/${pool.metadata?.name}`, snap);
  }
  // Grouped by the pool label, then split by ownership: a pool's snapshot holds the pods it
  // controls; the others are foreign to it, or orphans of a pool of that name that is gone.
  const orphans: V1Pod[] = [];
  for (const pod of pods) {
    const snap = snapshots.get(`${pod.metadata?.namespace}/${pod.metadata?.labels?.[SANDBOX_POOL_LABEL]}`);
    if (orphanedFrom(pod, snap?.pool)) orphans.push(pod);
    else if (snap) snap.pods.push(pod);
  }
  for (const snap of snapshots.values()) {
    const { owned, foreign } = partitionPods(snap.pool, snap.pods);
    snap.pods = owned;
    if (foreign.length > 0) snap.foreign = foreign;
  }
  return {
    pools: snapshots,
    envs: reconcileEnvs
      ? envSnapshotsFrom(
          {
            envs,
            pools,
            templates,
            pullSecrets: new Set(secretNames),
            podsByPool: new Map([...snapshots].map(([key, snap]) => [key, snap.pods])),
            catalog,
          },
          clusterId,
        )
      : [],
    allEnvs: envs,
    ...(needTemplates ? { templates: templateList } : {}),
    orphans,
  };
}
