// Post-start hooks are what a claim asks to happen once its container runs: today one kind, an
// envd /init that hands the sandbox its env vars and access token, which is how a claim gets its
// own env (and secrets) while staying on the warm path. They are written at claim time in the
// post-start-hooks annotation, run after Starting → Running, and removed once they succeeded.
import type { V1Pod } from "@kubernetes/client-node";
import * as v from "valibot";
import { POST_START_HOOKS_ANNOTATION, SANDBOX_PHASE } from "../api/keys.ts";
import { isTerminating } from "../reconcile/action.ts";
import { sandboxPhaseOf } from "./phase-label.ts";

/** ENVD_PORT is where E2B's envd listens in a sandbox. */
export const ENVD_PORT = 49983;

/**
 * PostStartHookAction is one hook. EnvdInit POSTs envd's /init on the pod with the claim's env
 * vars (sealed: see lib/sandboxes/sealing.ts) and the sandbox's access token.
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
