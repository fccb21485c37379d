// A released pod is reset in place (Stopping → Idle) and then serves the next claim, so the
// autoscaler counts it as supply. A reset can also stall (an idle image that cannot be pulled)
// or be meant to end in a replacement; such a pod serves nobody and must not hide demand.
import type { V1Pod } from "@kubernetes/client-node";
import { REPLACE_ON_RESET_ANNOTATION, SANDBOX_PHASE } from "../crd/keys.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { parseGoDuration } from "../util/duration.ts";
import { targetImagesOf } from "./completion.ts";
import { readInplaceState } from "./inplace-state.ts";
import { sandboxPhaseOf } from "./phase-label.ts";
import { podPhaseDuration } from "./phase-since.ts";

/** STOPPING_TIMEOUT_MS is the least time a reset may take before its pod is replaced. */
export const STOPPING_TIMEOUT_MS = 5 * 60_000;

/** stoppingTimeoutMs is STOPPING_TIMEOUT_MS, or the pool's defaultStartupTimeout when longer. */
export function stoppingTimeoutMs(pool: SandboxPool): number {
  return Math.max(STOPPING_TIMEOUT_MS, parseGoDuration(pool.spec.defaultStartupTimeout) ?? 0);
}

const STALLED = new Set(["ErrImagePull", "ImagePullBackOff", "CrashLoopBackOff", "InvalidImageName"]);

/** ResetBlocker says why a stopping pod will not be idle by itself, and whether to give up now. */
export interface ResetBlocker {
  reason: "Replace" | "Stalled" | "TimedOut";
  message: string;
}

/**
 * resetBlocker is why a stopping pod will not return to idle by itself: it is to be replaced
 * (REPLACE_ON_RESET_ANNOTATION), it outlived stoppingTimeoutMs, or a container it waits for
 * cannot start (pull error, crash loop: it may still recover, so only the timeout gives up on
 * it). Undefined for a reset under way, and for any pod that is not stopping.
 */
export function resetBlocker(pod: V1Pod, pool: SandboxPool, now: Date): ResetBlocker | undefined {
  if (sandboxPhaseOf(pod) !== SANDBOX_PHASE.STOPPING) return undefined;
  const replace = pod.metadata?.annotations?.[REPLACE_ON_RESET_ANNOTATION];
  if (replace) return { reason: "Replace", message: replace };
  const elapsed = podPhaseDuration(pod, SANDBOX_PHASE.STOPPING, now) ?? 0;
  const limit = stoppingTimeoutMs(pool);
  const { state } = readInplaceState(pod);
  const targets = state ? Object.keys(targetImagesOf(pod, state)) : [];
  const stalled = (pod.status?.containerStatuses ?? []).find(
    (s) => targets.includes(s.name) && STALLED.has(s.state?.waiting?.reason ?? ""),
  );
  const why = stalled
    ? `: container ${JSON.stringify(stalled.name)} ${stalled.state?.waiting?.reason}: ${stalled.state?.waiting?.message ?? ""}`.trimEnd()
    : "";
  if (elapsed > limit)
    return {
      reason: "TimedOut",
      message: `still resetting after ${Math.round(elapsed / 1000)} s (limit ${Math.round(limit / 1000)} s)${why}`,
    };
  return stalled ? { reason: "Stalled", message: `reset stalled${why}` } : undefined;
}
