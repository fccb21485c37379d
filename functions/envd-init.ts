import type { V1Pod } from "@kubernetes/client-node";
import { envdAccessToken, unseal } from "../lib/claims/sealing.ts";
import { SANDBOX_ID_LABEL } from "../lib/crd/keys.ts";
import { incarnationOf } from "../lib/lifecycle/incarnation.ts";
import type { PostStartHookAction } from "../lib/lifecycle/post-start-hooks.ts";
import type { HookRun } from "../lib/reconcile/post-start-hooks.ts";
import type { PostStartDeps } from "./host-deps.ts";

/** sleep waits between attempts (a hook run is bounded: at most the listed delays). */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * envdInit POSTs envd's /init on the pod (its IP, the hook's port) with the claim's env vars and
 * the sandbox's access token, as E2B's orchestrator does, retrying after each of the configured
 * delays (envd may still be starting). Env values never appear in errors or logs.
 */
export async function envdInit(
  deps: PostStartDeps,
  pod: V1Pod,
  hook: Extract<PostStartHookAction, { type: "EnvdInit" }>,
  now: Date,
): Promise<HookRun> {
  const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL] ?? "";
  const ip = pod.status?.podIP;
  if (!ip) return { ok: false, error: "the pod has no IP yet" };
  let envVars: Record<string, string> = {};
  if (hook.sealedEnvVars) {
    const plain = await unseal(deps.keys, id, hook.sealedEnvVars);
    if (plain === undefined)
      return { ok: false, error: "the sealed env vars cannot be opened (sealing key changed?)" };
    try {
      envVars = JSON.parse(plain) as Record<string, string>;
    } catch {
      return { ok: false, error: "the sealed env vars are not JSON" };
    }
  }
  const accessToken = await envdAccessToken(deps.keys, id, incarnationOf(pod));
  const host = ip.includes(":") ? `[${ip}]` : ip;
  const url = `http://${host}:${hook.port}/init`;
  let error = "not attempted";
  for (const delay of [0, ...deps.retryDelaysMs]) {
    if (delay > 0) await sleep(delay);
    try {
      const res = await deps.fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", "x-access-token": accessToken },
        body: JSON.stringify({ envVars, accessToken, timestamp: now.toISOString() }),
        signal: AbortSignal.timeout(deps.attemptTimeoutMs),
      });
      await res.body?.cancel();
      if (res.ok) return { ok: true };
      error = `POST ${url} answered ${res.status}`;
    } catch (e) {
      const cause = (e as { cause?: { code?: string } }).cause?.code;
      error = `POST ${url} failed: ${cause ?? (e as Error).name}`;
    }
  }
  return { ok: false, error };
}
