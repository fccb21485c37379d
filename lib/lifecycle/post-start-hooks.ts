// Post-start hooks are what a claim asks to happen once its container runs: today one kind, an
// envd /init that hands the sandbox its env vars and access token, which is how a claim gets its
// own env (and secrets) while staying on the warm path. They are written at claim time in the
// post-start-hooks annotation, run after Starting → Running, and removed once they succeeded.
import type { V1Pod } from "@kubernetes/client-node";
import * as v from "valibot";
import { ENVD_ANNOTATION, POST_START_HOOKS_ANNOTATION, SANDBOX_PHASE } from "../crd/keys.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { isTerminating } from "../kube/action.ts";
import { sandboxPhaseOf } from "./phase-label.ts";

/** ENVD_PORT is where E2B's envd listens in a sandbox. */
export const ENVD_PORT = 49983;

/**
 * PostStartHookAction is one hook. EnvdInit POSTs envd's /init on the pod with the claim's env
 * vars (sealed: see lib/claims/sealing.ts) and the sandbox's access token.
 */
export const PostStartHookAction = v.variant("type", [
  v.object({
    type: v.literal("EnvdInit"),
    port: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535)),
    sealedEnvVars: v.optional(v.string()),
  }),
]);
export type PostStartHookAction = v.InferOutput<typeof PostStartHookAction>;

/** readHooks reads a pod's hooks; an unreadable annotation is an error the hook step reports. */
export function readHooks(
  pod: V1Pod,
): { ok: true; hooks: PostStartHookAction[] } | { ok: false; reason: string } {
  const raw = pod.metadata?.annotations?.[POST_START_HOOKS_ANNOTATION];
  if (raw === undefined) return { ok: true, hooks: [] };
  try {
    const parsed = v.safeParse(v.array(PostStartHookAction), JSON.parse(raw));
    if (parsed.success) return { ok: true, hooks: parsed.output };
    return {
      ok: false,
      reason: `the ${POST_START_HOOKS_ANNOTATION} annotation holds hooks this controller does not know`,
    };
  } catch {
    return { ok: false, reason: `the ${POST_START_HOOKS_ANNOTATION} annotation is not JSON` };
  }
}

/** hasPendingHooks: the pod runs and still has hooks to run (their annotation goes once they ran). */
export function hasPendingHooks(pod: V1Pod): boolean {
  return (
    !isTerminating(pod) &&
    sandboxPhaseOf(pod) === SANDBOX_PHASE.RUNNING &&
    pod.metadata?.annotations?.[POST_START_HOOKS_ANNOTATION] !== undefined
  );
}

/**
 * runsEnvd: the pool's pods run envd unless its pod template says `agentbox.navix.sh/envd: none`.
 * Given the claimed pod, the pod's own annotation decides (it carries its template's): a pod made
 * before the template changed runs what it was made with, and the router reads the same source.
 */
export function runsEnvd(pool: SandboxPool, pod?: V1Pod): boolean {
  if (pod) return pod.metadata?.annotations?.[ENVD_ANNOTATION] !== "none";
  const meta = pool.spec?.template?.metadata as { annotations?: Record<string, unknown> } | undefined;
  return meta?.annotations?.[ENVD_ANNOTATION] !== "none";
}

/** ClaimHookInput is what decides a claim's hooks besides its pool. */
export interface ClaimHookInput {
  /** sealing: the control plane has a sealing key (it can derive envd tokens and seal env vars). */
  sealing: boolean;
  /** port is envd's port on the pod. */
  port: number;
  /** sealedEnvVars are the claim's env vars, sealed for its sandbox (none: no env vars). */
  sealedEnvVars?: string;
}

/**
 * claimHooks are the post-start hooks of a claim on `pool` (of `pod`, once one is chosen), or why
 * the pool cannot take it.
 * Every claim on a pool whose pods run envd initialises it (EnvdInit), env vars or not: a real
 * envd that no /init reached holds no token and checks nothing (files as root included), so the
 * sandbox is answered Running only once envd holds the claim's token. Without a sealing key there
 * is no token to give (the router then refuses envd's port, /health apart) and no hook; env vars
 * need envd, so they are refused on a pool without envd, and without a sealing key.
 */
export function claimHooks(
  pool: SandboxPool,
  input: ClaimHookInput,
  pod?: V1Pod,
): { ok: true; hooks: PostStartHookAction[] } | { ok: false; message: string } {
  const envd = runsEnvd(pool, pod);
  if (input.sealedEnvVars !== undefined && !envd)
    return {
      ok: false,
      message: `envVars: pool ${pool.metadata?.namespace}/${pool.metadata?.name} runs no envd (${ENVD_ANNOTATION}: none), which env vars need`,
    };
  if (!envd || !input.sealing) return { ok: true, hooks: [] };
  const sealed = input.sealedEnvVars === undefined ? {} : { sealedEnvVars: input.sealedEnvVars };
  return { ok: true, hooks: [{ type: "EnvdInit", port: input.port, ...sealed }] };
}
