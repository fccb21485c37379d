import type { V1Pod } from "@kubernetes/client-node";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import {
  pickTemplateEnv,
  pickTemplatePool,
  poolUsableBy,
  usableEnvNames,
  usablePoolNames,
  visibleTemplateNames,
} from "../../lib/claims/pool-choice.ts";
import { ENV_LABEL } from "../../lib/crd/keys.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import { CANDIDATES_PER_LIST, shardGroupSelector, shardOrder } from "../../lib/pool/claim-shards.ts";
import type { HostDeps } from "../host-deps.ts";

/** Target is what a create names: one pool, one Env, or a template. */
export interface Target {
  pool?: string;
  env?: string;
  template?: string;
}

export type PoolResolution =
  | { ok: true; pool: SandboxPool; template?: SandboxTemplate; memberOf?: SandboxEnv }
  | { ok: true; env: SandboxEnv; pools: SandboxPool[]; template?: SandboxTemplate }
  | { ok: false; what: "pool" | "env" | "template"; name: string; choices: string[] };

/** TargetReads are the objects a claim's target names, read before the tenant is known. */
export interface TargetReads {
  pool?: SandboxPool;
  template?: SandboxTemplate;
  /**
   * memberOf is the Env a pool target is a member of (its ENV_LABEL), from the watch cache and
   * only for a known caller: its group's scale-down policy says how long a marked pod may still be
   * claimed (lib/claims/candidates.ts). Absent for a standalone pool, or an Env not found.
   */
  memberOf?: SandboxEnv;
  /** templatePools are the pools of a template target (all pools; pickTemplatePool chooses). */
  templatePools?: SandboxPool[];
  /** env and envPools: an Env target, or the Env a template target routes to, and its namespace's pools. */
  env?: SandboxEnv;
  envPools?: SandboxPool[];
  /** templateEnvs are the Envs of a template target (pickTemplateEnv chooses). */
  templateEnvs?: SandboxEnv[];
  /**
   * shards and firstPage: a pool target's shard order (see candidateSelectors) and the idle pods
   * of its first shard, listed alongside the pool read.
   */
  shards?: string[];
  firstPage?: V1Pod[];
}

/**
 * listCandidates lists up to a page of idle pods for one selector from the watch cache: a pod
 * claimed since is refused by the claim's resourceVersion test, so a stale answer costs a retry,
 * never a double claim.
 */
export async function listCandidates(deps: HostDeps, namespace: string, selector: string): Promise<V1Pod[]> {
  return (await deps.kube.listPods(namespace, selector, { limit: CANDIDATES_PER_LIST, cached: true })).items;
}

/**
 * cachedThenFresh reads from the apiserver's watch cache and, only when the object is missing
 * there and the caller is known (`known` resolves true), once more from etcd: an object created a
 * moment ago is found, the common case costs no quorum read, and an anonymous caller never does.
 */
async function cachedThenFresh<T>(
  read: (opts: { cached?: boolean }) => Promise<T>,
  known: Promise<boolean>,
): Promise<T | undefined> {
  return (await orMissing(read({ cached: true }))) ?? ((await known) ? orMissing(read({})) : undefined);
}

/**
 * readTarget reads what a target names: the pool and its template, or the template and the pools.
 * It needs no tenant, so the claim path runs it while the API key is being checked: `known`
 * resolves once the key is, true when it was good. Until then only watch-cache reads of the named
 * objects run; a named pool's first candidates are listed, the pools and Envs of an Env or
 * template target are listed, and a missing object is read from etcd, only for a known caller. An
 * anonymous create costs no quorum read and no list, whatever it names.
 */
export async function readTarget(
  deps: HostDeps,
  target: Target,
  known: Promise<boolean> = Promise.resolve(true),
): Promise<TargetReads> {
  if (target.env) return readEnvTarget(deps, target.env, known);
  if (target.pool) {
    const [namespace = "", name = ""] = target.pool.split("/");
    // One random shard: the pool's idle count, which sizes the later groups, is not known yet. On
    // a pool of fewer than ~64 idle pods that shard is often empty and the create lists once more.
    const shards = shardOrder(deps.random);
    // The cached read is shared with this host's other creates of the moment (ADR 0020).
    const poolRead = cachedThenFresh(
      (o) =>
        o.cached && deps.poolReads
          ? deps.poolReads.get(target.pool ?? "", () => orMissing(deps.kube.getPool(namespace, name, o)))
          : deps.kube.getPool(namespace, name, o),
      known,
    );
    // A host with a feed of the pool's idle pods takes candidates from it (ADR 0024); it opens a
    // feed only for a pool that exists, so a caller naming pools at random opens none.
    const listFirst = deps.idleFeed
      ? Promise.all([known, poolRead]).then(
          async ([ok, found]) =>
            ok && found !== undefined && !(await deps.idleFeed?.settled(namespace, name)),
        )
      : known;
    const first = listFirst.then((list) =>
      list ? listCandidates(deps, namespace, shardGroupSelector(name, shards.slice(0, 1))) : undefined,
    );
    first.catch(() => {}); // awaited below, unless the pool read fails first
    const pool = await poolRead;
    const templateName = pool?.spec.templateName;
    const [template, memberOf] = await Promise.all([
      templateName ? cachedThenFresh((o) => deps.kube.getTemplate(templateName, o), known) : undefined,
      pool ? memberEnvOf(deps, pool, [], known) : undefined,
    ]);
    const firstPage = pool ? await first : undefined;
    return {
      ...(pool ? { pool } : {}),
      ...(template ? { template } : {}),
      ...(memberOf ? { memberOf } : {}),
      shards,
      ...(firstPage ? { firstPage } : {}),
    };
  }
  const name = target.template ?? "";
  const [template, pools, envs] = await Promise.all([
    cachedThenFresh((o) => deps.kube.getTemplate(name, o), known),
    // From the watch cache (the pool choice only needs idle counts), and only for a known caller.
    knownList(known, () => deps.kube.listPools(undefined, { cached: true })),
    deps.clusterId
      ? knownList(known, () => deps.kube.listEnvs(undefined, { cached: true }))
      : Promise.resolve({ items: [] }),
  ]);
  return { ...(template ? { template } : {}), templatePools: pools.items, templateEnvs: envs.items };
}

/**
 * memberEnvOf is the Env a pool is a member of (the Env its ENV_LABEL names, in its namespace):
 * found among `listed`, else read from the watch cache once the caller is known (`known` resolves
 * true); undefined for a standalone pool, an Env not found, or an anonymous caller.
 */
async function memberEnvOf(
  deps: HostDeps,
  pool: SandboxPool,
  listed: readonly SandboxEnv[],
  known: Promise<boolean>,
): Promise<SandboxEnv | undefined> {
  const namespace = pool.metadata?.namespace ?? "";
  const name = pool.metadata?.labels?.[ENV_LABEL];
  if (!name) return undefined;
  const found = listed.find((e) => e.metadata?.namespace === namespace && e.metadata?.name === name);
  if (found) return found;
  return (await known) ? orMissing(deps.kube.getEnv(namespace, name, { cached: true })) : undefined;
}

/**
 * knownList runs a list once the caller is known (`known` resolves true), else answers empty: an
 * anonymous create, which is refused anyway, never makes the apiserver list every pool or Env. The
 * key check is quick, so a known caller's list starts a moment later than it could, no more.
 */
function knownList<T>(known: Promise<boolean>, list: () => Promise<{ items: T[] }>): Promise<{ items: T[] }> {
  return known.then((ok) => (ok ? list() : { items: [] }));
}

/** readEnvTarget reads an Env target: the Env, its template and the pools of its namespace. */
async function readEnvTarget(deps: HostDeps, ref: string, known: Promise<boolean>): Promise<TargetReads> {
  const [namespace = "", name = ""] = ref.split("/");
  const [env, pools] = await Promise.all([
    cachedThenFresh((o) => deps.kube.getEnv(namespace, name, o), known),
    knownList(known, () => deps.kube.listPools(namespace, { cached: true })),
  ]);
  const templateName = env?.spec.templateRef.name;
  const template = templateName
    ? await cachedThenFresh((o) => deps.kube.getTemplate(templateName, o), known)
    : undefined;
  return { ...(env ? { env } : {}), ...(template ? { template } : {}), envPools: pools.items };
}

/**
 * resolvePool finds what a claim targets: `pool` ("namespace/name") directly; `env` ("namespace/
 * name") with its member pools; or, for `template`, the Env built on it (when this host routes
 * Envs: it knows its cluster ID), else the pool created from it with the most idle pods. A target
 * the tenant may not see is reported as unknown, with the pools, Envs or templates it may use as
 * choices (read only on this error path). `reads` may have been started before the tenant was
 * known (see readTarget).
 */
export async function resolvePool(
  deps: HostDeps,
  tenant: Tenant,
  target: Target,
  reads: Promise<TargetReads> = readTarget(deps, target),
): Promise<PoolResolution> {
  const { pool, template, templatePools, env, envPools, templateEnvs, memberOf } = await reads;
  if (target.pool) {
    if (pool && poolUsableBy(pool.spec.templateName, template, tenant))
      return { ok: true, pool, ...(template ? { template } : {}), ...(memberOf ? { memberOf } : {}) };
    const [pools, templates] = await Promise.all([deps.kube.listPools(), deps.kube.listTemplates()]);
    return {
      ok: false,
      what: "pool",
      name: target.pool,
      choices: usablePoolNames(pools.items, templates.items, tenant),
    };
  }
  if (target.env) {
    if (env && poolUsableBy(env.spec.templateRef.name, template, tenant))
      return { ok: true, env, pools: envPools ?? [], ...(template ? { template } : {}) };
    const [envs, templates] = await Promise.all([deps.kube.listEnvs(), deps.kube.listTemplates()]);
    return {
      ok: false,
      what: "env",
      name: target.env,
      choices: usableEnvNames(envs.items, templates.items, tenant, deps.clusterId ?? ""),
    };
  }
  const name = target.template ?? "";
  if (template && poolUsableBy(name, template, tenant)) {
    const routed = deps.clusterId ? pickTemplateEnv(templateEnvs ?? [], name, deps.clusterId) : undefined;
    if (routed) return { ok: true, env: routed, pools: templatePools ?? [], template };
    // The cached list may miss a pool made a moment ago: ask etcd before saying there is none.
    const chosen =
      pickTemplatePool(templatePools ?? [], name) ??
      pickTemplatePool((await deps.kube.listPools()).items, name);
    if (chosen) {
      const member = await memberEnvOf(deps, chosen, templateEnvs ?? [], Promise.resolve(true));
      return { ok: true, pool: chosen, template, ...(member ? { memberOf: member } : {}) };
    }
  }
  const templates = (await deps.kube.listTemplates()).items;
  return { ok: false, what: "template", name, choices: visibleTemplateNames(templates, tenant) };
}
