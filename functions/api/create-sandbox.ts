import type { V1Pod } from "@kubernetes/client-node";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { planClaims } from "../../lib/claims/claim-plan.ts";
import { claimTimeouts } from "../../lib/claims/claim-timeouts.ts";
import { envShapeDecision, poolShapeDecision } from "../../lib/claims/instance-shape-route.ts";
import { requestedImages } from "../../lib/claims/requested-images.ts";
import { type SandboxView, sandboxView } from "../../lib/claims/sandbox-view.ts";
import type { CreateSandboxRequest } from "../../lib/claims/schemas.ts";
import { seal } from "../../lib/claims/sealing.ts";
import { limitFor } from "../../lib/claims/team-limits.ts";
import { waitSeconds } from "../../lib/claims/wait-seconds.ts";
import { ON_TIMEOUT_ANNOTATION, SEALED_ENV_VARS_ANNOTATION } from "../../lib/crd/keys.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { isPrivateTraffic, networkMarks } from "../../lib/egress/network.ts";
import { claimHooks } from "../../lib/lifecycle/post-start-hooks.ts";
import { newSandboxId } from "../../lib/lifecycle/sandbox-ids.ts";
import { SERVED_MARK_ANNOTATION } from "../../lib/pool/pending-requests.ts";
import { UNSUITABLE } from "../cache/idle-dispatch.ts";
import { claimSandbox } from "../claim-sandbox.ts";
import { fenceFirst } from "../egress/fence-first.ts";
import type { HostDeps } from "../host-deps.ts";
import { type Claim, claimFrom } from "./claim-from.ts";
import { readTarget, resolvePool, type TargetReads } from "./resolve-pool.ts";
import { recordDemand, waitForIdle } from "./wait-for-idle.ts";

/**
 * CLAIM_DEADLINE_MS bounds how long one create keeps racing others for idle pods that remain
 * (a 503 "contended"); a drained pool answers at once instead.
 */
const CLAIM_DEADLINE_MS = 30_000;

export type CreateOutcome =
  | { ok: true; sandbox: SandboxView; pod: V1Pod; pool: SandboxPool }
  | {
      ok: false;
      reason: "unknown";
      what: "pool" | "env" | "template" | "instanceType";
      name: string;
      choices: string[];
      /** message says what was not found, when more than "no <what> <name>" (an instance shape). */
      message?: string;
    }
  | { ok: false; reason: "invalid"; message: string }
  | { ok: false; reason: "not-configured"; message: string }
  | {
      ok: false;
      reason: "exhausted";
      where: string;
      tried: number;
      contended?: boolean;
      /** stopping: the host's shutdown ended the claims, or the wait for an idle pod (deps.stopping). */
      stopping?: boolean;
    }
  | { ok: false; reason: "limited"; team: string; held: number; limit: number }
  /** egress: the sandbox's NetworkPolicy could not be written, so nothing was claimed (fail closed). */
  | { ok: false; reason: "egress"; message: string; retry: boolean };

/** ClaimExtras are what the E2B API adds to a create: annotations, and its wait for Running. */
export interface ClaimExtras {
  annotations?: Readonly<Record<string, string>>;
  /** waitSeconds: the caller waits this long for Running (E2B always does), by the pool claimed. */
  waitSeconds?: (pool: SandboxPool) => number;
  /** onTimeout "pause": the sandbox pauses at the end of its lifetime instead of ending (E2B's autoPause). */
  onTimeout?: "pause";
}

/**
 * hookPlan seals a create's env vars once for its sandbox and answers each pool's hooks
 * (claimHooks: envd's /init on every claim of a pool that runs envd) with the sealed env vars, or
 * why the create cannot have env vars at all: they need a sealing key.
 */
async function hookPlan(
  deps: HostDeps,
  sandboxId: string,
  req: CreateSandboxRequest,
): Promise<
  | { hooksOf: (pool: SandboxPool, pod?: V1Pod) => ReturnType<typeof claimHooks>; sealedEnvVars?: string }
  | string
> {
  const envVars = req.envVars ?? {};
  const hasEnv = Object.keys(envVars).length > 0;
  const keys = deps.postStart?.keys;
  if (hasEnv && !keys) return "env vars need a sealing key on the control plane (AGENTBOX_SEALING_KEY)";
  const sealedEnvVars = hasEnv && keys ? await seal(keys, sandboxId, JSON.stringify(envVars)) : undefined;
  const input = {
    sealing: keys !== undefined,
    port: deps.envdPort,
    ...(sealedEnvVars ? { sealedEnvVars } : {}),
  };
  return {
    hooksOf: (pool, pod) => claimHooks(pool, input, pod),
    ...(sealedEnvVars ? { sealedEnvVars } : {}),
  };
}

/**
 * createSandbox claims one idle pod of the target (a pool, or a member of an Env) for the tenant
 * (claimFrom, over the plan's pools). Nothing is written unless a claim succeeds, so a failed
 * create leaves every pod idle. Every create stamps its pool's last-sandbox-create-time (the
 * autoscaler's demand signal, throttled); one that found no idle pod and may wait registers as
 * pending on the member that would grow, and watches every pool of its target for a pod that
 * becomes idle (a release, a new pod). With deps.metrics, the claim is timed by its outcome
 * (agentbox_sandbox_claim_duration_seconds: claimed, exhausted, limited, unknown, invalid,
 * not-configured) and a claimed one counted by pool.
 */
export async function createSandbox(
  deps: HostDeps,
  tenant: Tenant,
  req: CreateSandboxRequest,
  extras: ClaimExtras = {},
  reads?: Promise<TargetReads>,
): Promise<CreateOutcome> {
  const t0 = performance.now();
  const outcome = await claimOrWhy(deps, tenant, req, extras, reads);
  deps.metrics?.claimDuration.observe(
    { outcome: outcome.ok ? "claimed" : outcome.reason },
    (performance.now() - t0) / 1000,
  );
  if (outcome.ok)
    deps.metrics?.creates.inc({
      namespace: outcome.pool.metadata?.namespace ?? "",
      pool: outcome.pool.metadata?.name ?? "",
    });
  return outcome;
}

/** claimOrWhy is createSandbox's work: the claimed sandbox, or why there is none. */
async function claimOrWhy(
  deps: HostDeps,
  tenant: Tenant,
  req: CreateSandboxRequest,
  extras: ClaimExtras,
  reads: Promise<TargetReads> | undefined,
): Promise<CreateOutcome> {
  if (req.env && !deps.clusterId)
    return {
      ok: false,
      reason: "not-configured",
      message:
        "this host routes no Envs: it has no cluster ID (AGENTBOX_CLUSTER_ID on the Node host, CLUSTER_ID on the Worker)",
    };
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
  // An instance shape (asked for, or the Env's default) narrows the members; none has it: 404.
  const shape =
    "pool" in resolved
      ? poolShapeDecision(resolved.pool, resolved.memberOf, req)
      : envShapeDecision(resolved.env, deps.clusterId ?? "", req);
  if (!shape.ok) {
    const { name, choices, message } = shape;
    return { ok: false, reason: "unknown", what: "instanceType", name, choices, message };
  }
  const limit = limitFor(deps.teamLimits, tenant.team);
  const holds = limit === undefined ? undefined : deps.teamHolds;
  const held = holds ? await holds.held(tenant.team) : 0;
  const limited = (count: number): CreateOutcome => ({
    ok: false,
    reason: "limited",
    team: tenant.team,
    held: count,
    limit: limit ?? 0,
  });
  if (limit !== undefined && held >= limit) return limited(held);
  const plan = planClaims(resolved, deps.clusterId ?? "", deps.now(), shape.accept);
  const sample = plan.watch[0];
  if (!sample) return { ok: false, reason: "exhausted", where: plan.where, tried: 0 };
  const sampleImages = requestedImages(sample, req);
  if (typeof sampleImages === "string") return { ok: false, reason: "invalid", message: sampleImages };
  const sandboxId = newSandboxId();
  const hookPlanned = await hookPlan(deps, sandboxId, req);
  if (typeof hookPlanned === "string") return { ok: false, reason: "invalid", message: hookPlanned };
  const { hooksOf, sealedEnvVars } = hookPlanned;
  const network = networkMarks(req.network);
  // The sealed env vars stay on the pod for the sandbox's life: a pause keeps them for its resume.
  const marks = {
    ...network,
    annotations: {
      ...network.annotations,
      ...(sealedEnvVars ? { [SEALED_ENV_VARS_ANNOTATION]: sealedEnvVars } : {}),
      ...(extras.onTimeout ? { [ON_TIMEOUT_ANNOTATION]: extras.onTimeout } : {}),
    },
  };
  const sampleHooks = hooksOf(sample);
  if (!sampleHooks.ok) return { ok: false, reason: "invalid", message: sampleHooks.message };
  if (isPrivateTraffic(req.network) && !deps.postStart?.keys)
    return {
      ok: false,
      reason: "invalid",
      message:
        "private traffic (allowPublicTraffic: false) needs a sealing key on the control plane (AGENTBOX_SEALING_KEY)",
    };
  /** claimPhase claims a pod for sandboxId, now or after a wait: the sandbox, or why there is none. */
  const claimPhase = async (): Promise<CreateOutcome> => {
    // The team's count when a claim found it at its limit (every claim checks again: a create that
    // waited claims long after the check above, and this host's creates claim at once).
    let limitedAt: number | undefined;
    const claimIn =
      (pool: SandboxPool, annotations: Readonly<Record<string, string>> = {}): Claim =>
      async (pod) => {
        const images = requestedImages(pool, req);
        if (typeof images === "string") return UNSUITABLE;
        // The hooks are the pod's: an Env's members, and a pool's pods made before its template
        // changed, may differ in whether they run envd.
        const planned = hooksOf(pool, pod);
        if (!planned.ok) return UNSUITABLE;
        const hooks = planned.hooks;
        // A create that will wait for Running says so on the pod: it completes the start itself.
        const waits = req.wait ? waitSeconds(pool, req) : extras.waitSeconds?.(pool);
        const claim = () =>
          claimSandbox(deps, pod, {
            sandboxId,
            // The host's watch of its waiting creates' pods selects its own claims (ADR 0037).
            ...(deps.pods?.claimedBy ? { claimedBy: deps.pods.claimedBy } : {}),
            containerImages: images,
            team: tenant.team,
            user: tenant.user,
            ...(req.metadata ? { metadata: req.metadata } : {}),
            ...(hooks.length > 0 ? { postStartHooks: hooks } : {}),
            ...(extras.annotations || Object.keys(annotations).length > 0
              ? { annotations: { ...extras.annotations, ...annotations } }
              : {}),
            ...(waits ? { waiterUntil: new Date(deps.now().getTime() + waits * 1000) } : {}),
            // The egress label, the network settings, private traffic: one write with the claim.
            marks,
            ...claimTimeouts(pool, req),
            ...(req.timeout ? { lifetimeSeconds: req.timeout } : {}),
          });
        const checked =
          holds && limit !== undefined
            ? await holds.claim(tenant.team, limit, claim, (r) => (r.ok ? r.pod : undefined))
            : { ok: true as const, value: await claim() };
        if (!checked.ok) {
          // The pod stays for others (UNSUITABLE for this create); the create ends 429.
          limitedAt = checked.held;
          return UNSUITABLE;
        }
        return checked.value.ok ? checked.value.pod : undefined;
      };
    const served = (pod: V1Pod, pool: SandboxPool): CreateOutcome | undefined => {
      recordDemand(deps, pool, deps.now());
      const view = sandboxView(pod, deps.now());
      return view ? { ok: true, sandbox: view, pod, pool } : undefined;
    };
    const first = "pool" in resolved ? await targetReads : undefined;
    let tried = 0;
    const deadline = deps.now().getTime() + CLAIM_DEADLINE_MS;
    for (const pool of plan.tryNow) {
      const got = await claimFrom(deps, pool, claimIn(pool), deadline, first, plan.env);
      tried += got.tried;
      if (limitedAt !== undefined) return limited(limitedAt);
      const outcome = got.pod && served(got.pod, pool);
      if (outcome) return outcome;
      if (got.stopping) return { ok: false, reason: "exhausted", where: plan.where, tried, stopping: true };
      if (got.contended) return { ok: false, reason: "exhausted", where: plan.where, tried, contended: true };
    }
    // No idle pod now: say so to the autoscaler, then, when the caller is willing to wait, watch
    // for a pod that becomes idle and race for it.
    const grow = plan.grow ?? sample;
    recordDemand(deps, grow, deps.now());
    if (req.waitTimeout) {
      // A team at its limit (with its creates already waiting here) is no demand: the pool does not
      // grow for a create that would be refused at its claim.
      const counted = holds ? holds.demand(tenant.team, limit, await holds.held(tenant.team)) : () => {};
      const ticket = counted ? deps.pending.enter(grow) : 0;
      const giveUp = new AbortController();
      // A stopping host ends its waits (ADR 0029); a claim under way still counts.
      const stop = () => giveUp.abort();
      if (deps.stopping.aborted) stop();
      else deps.stopping.addEventListener("abort", stop, { once: true });
      const won = await waitForIdle(
        deps,
        plan.watch,
        req.waitTimeout * 1000,
        async (candidate, pool) => {
          // The claim names the mark that counted this create, so the autoscaler stops counting it.
          const mark = counted ? deps.pending.servedMark(grow, ticket) : undefined;
          const pod = await claimIn(pool, mark ? { [SERVED_MARK_ANNOTATION]: mark } : {})(candidate);
          if (limitedAt !== undefined) giveUp.abort();
          return pod && pod !== UNSUITABLE ? { pod, pool } : pod;
        },
        giveUp.signal,
        plan.env,
      ).finally(() => {
        deps.stopping.removeEventListener("abort", stop);
        if (!counted) return;
        counted();
        deps.pending.leave(grow);
      });
      if (limitedAt !== undefined) return limited(limitedAt);
      const outcome = won && served(won.pod, won.pool);
      if (outcome) return outcome;
      if (deps.stopping.aborted)
        return { ok: false, reason: "exhausted", where: plan.where, tried, stopping: true };
    }
    return { ok: false, reason: "exhausted", where: plan.where, tried };
  };
  // Egress rules: the sandbox's policy is written before any claim (fail closed), in every
  // namespace the create may claim in; a create that claims nothing takes it away again.
  const fence = await fenceFirst(deps, [...plan.tryNow, ...plan.watch], sandboxId, req.network);
  if (!fence.ok) return { ok: false, reason: "egress", message: fence.message, retry: fence.retry };
  try {
    const outcome = await claimPhase();
    if (!outcome.ok) await fence.undo();
    return outcome;
  } catch (e) {
    await fence.undo();
    throw e;
  }
}
