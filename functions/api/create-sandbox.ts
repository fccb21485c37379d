import type { V1Pod } from "@kubernetes/client-node";
import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";
import { selectorsAfterFirst, shardOrder } from "../../lib/pool/claim-shards.ts";
import { scaleDownPolicyFor } from "../../lib/pool/scale-plan.ts";
import { ENVD_PORT, type PostStartHookAction } from "../../lib/sandbox/post-start-hooks.ts";
import type { Tenant } from "../../lib/sandboxes/api-keys.ts";
import { orderCandidates } from "../../lib/sandboxes/candidates.ts";
import { claimTimeouts } from "../../lib/sandboxes/claim-timeouts.ts";
import { newSandboxId } from "../../lib/sandboxes/ids.ts";
import { requestedImages } from "../../lib/sandboxes/requested-images.ts";
import type { CreateSandboxRequest } from "../../lib/sandboxes/schemas.ts";
import { seal } from "../../lib/sandboxes/sealing.ts";
import { type SandboxView, sandboxView } from "../../lib/sandboxes/view.ts";
import { claimSandbox } from "../claim-sandbox.ts";
import type { ApiDeps } from "./deps.ts";
import { listCandidates, readTarget, resolvePool, type TargetReads } from "./resolve-pool.ts";
import { recordDemand, waitForIdle } from "./wait-for-idle.ts";

/** MAX_ATTEMPTS bounds the claim patches one create tries before answering 503. */
const MAX_ATTEMPTS = 48;

export type CreateOutcome =
  | { ok: true; sandbox: SandboxView; pod: V1Pod; pool: SandboxPool }
  | { ok: false; reason: "unknown"; what: "pool" | "template"; name: string; choices: string[] }
  | { ok: false; reason: "invalid"; message: string }
  | { ok: false; reason: "exhausted"; pool: string; tried: number };

/** ClaimExtras are what the E2B API adds to a create: envd's /init even without env vars, and annotations. */
export interface ClaimExtras {
  envdInit?: boolean;
  annotations?: Readonly<Record<string, string>>;
}

/**
 * postStartHooks are a create's hooks: envd's /init with the env vars sealed for this sandbox,
 * when there are env vars or the caller (the E2B API) always wants envd initialised.
 */
async function postStartHooks(
  deps: ApiDeps,
  sandboxId: string,
  req: CreateSandboxRequest,
  extras: ClaimExtras,
): Promise<PostStartHookAction[] | string> {
  const envVars = req.envVars ?? {};
  const hasEnv = Object.keys(envVars).length > 0;
  if (!hasEnv && !extras.envdInit) return [];
  const keys = deps.postStart?.keys;
  if (!keys)
    return "env vars and envd access tokens need a sealing key on the control plane (AGENTBOX_SEALING_KEY)";
  const sealedEnvVars = hasEnv ? await seal(keys, sandboxId, JSON.stringify(envVars)) : undefined;
  return [
    { type: "EnvdInit", port: deps.envdPort ?? ENVD_PORT, ...(sealedEnvVars ? { sealedEnvVars } : {}) },
  ];
}

/**
 * createSandbox claims one idle pod of the target pool for the tenant: it lists the idle pods of a
 * random group of claim shards, orders the claimable ones (shuffled, so concurrent creates pick
 * different pods) and tries them one by one with the preconditioned claim patch; a lost race moves
 * on to the next candidate, an exhausted group to the next, larger one. Nothing is written unless
 * a claim succeeds, so a failed create leaves every pod idle.
 */
export async function createSandbox(
  deps: ApiDeps,
  tenant: Tenant,
  req: CreateSandboxRequest,
  extras: ClaimExtras = {},
  reads?: Promise<TargetReads>,
): Promise<CreateOutcome> {
  const targetReads = reads ?? readTarget(deps, req);
  const resolved = await resolvePool(deps, tenant, req, targetReads);
  if (!resolved.ok)
    return {
      ok: false,
      reason: "unknown",
      what: resolved.what,
      name: resolved.name,
      choices: resolved.choices,
    };
  const { pool } = resolved;
  const images = requestedImages(pool, req);
  if (typeof images === "string") return { ok: false, reason: "invalid", message: images };
  const namespace = pool.metadata?.namespace ?? "";
  const name = pool.metadata?.name ?? "";
  const now = deps.now();
  const window = scaleDownPolicyFor(pool).protectionWindowSeconds;
  const sandboxId = newSandboxId();
  const hooks = await postStartHooks(deps, sandboxId, req, extras);
  if (typeof hooks === "string") return { ok: false, reason: "invalid", message: hooks };
  const timeouts = claimTimeouts(pool, req);
  const claim = (pod: V1Pod) =>
    claimSandbox(deps, pod, {
      sandboxId,
      containerImages: images,
      team: tenant.team,
      user: tenant.user,
      ...(req.metadata ? { metadata: req.metadata } : {}),
      ...(hooks.length > 0 ? { postStartHooks: hooks } : {}),
      ...(extras.annotations ? { annotations: extras.annotations } : {}),
      ...timeouts,
      ...(req.timeout ? { lifetimeSeconds: req.timeout } : {}),
    });
  // Idle pods of a random shard group per list, groups sized from the pool's idle count (see
  // candidateSelectors); a named pool's first shard was listed alongside the pool read (readTarget).
  const { shards = shardOrder(deps.random), firstPage } = await targetReads;
  const selectors = selectorsAfterFirst(name, shards, firstPage !== undefined, pool.status?.idleReplicas);
  const pages: (() => Promise<V1Pod[]>)[] = [
    ...(firstPage ? [async () => firstPage] : []),
    ...selectors.map((selector) => () => listCandidates(deps, namespace, selector)),
  ];
  let tried = 0;
  candidates: for (const list of pages) {
    const page = await list();
    for (const pod of orderCandidates(page, now, window, deps.random)) {
      if (tried++ >= MAX_ATTEMPTS) break candidates;
      const result = await claim(pod);
      if (result.ok) {
        const view = sandboxView(result.pod, deps.now());
        if (view) return { ok: true, sandbox: view, pod: result.pod, pool };
      }
    }
  }
  // No idle pod now: say so to the autoscaler, then, when the caller is willing to wait, watch
  // for a pod that becomes idle (a release, a new pod) and race for it.
  await recordDemand(deps, pool, deps.now());
  if (req.waitTimeout) {
    deps.pending?.enter(pool);
    const pod = await waitForIdle(deps, pool, req.waitTimeout * 1000, async (candidate) => {
      const result = await claim(candidate);
      return result.ok ? result.pod : undefined;
    }).finally(() => deps.pending?.leave(pool));
    const view = pod && sandboxView(pod, deps.now());
    if (pod && view) return { ok: true, sandbox: view, pod, pool };
  }
  return { ok: false, reason: "exhausted", pool: `${namespace}/${name}`, tried };
}
