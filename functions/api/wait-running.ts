import type { V1Pod } from "@kubernetes/client-node";
import { POST_START_HOOKS_ANNOTATION, SANDBOX_ID_LABEL, SANDBOX_PHASE } from "../../lib/api/keys.ts";
import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";
import { sandboxPhaseOf } from "../../lib/sandbox/inplace-state.ts";
import { latestOnly } from "../../lib/util/latest-only.ts";
import { runPodSteps } from "../reconcile-pod.ts";
import { followPod } from "../views/follow-pod.ts";
import type { ApiDeps } from "./deps.ts";

/**
 * WaitTimeline says where a wait went, in ms from its start: when the watch delivered the version
 * the waiter completed the start from (the kubelet had run the new containers), and when the wait
 * ended. Operators see it as Server-Timing.
 */
export interface WaitTimeline {
  kubeletMs?: number;
  endMs: number;
}

export type WaitOutcome = (
  | { ok: true; pod: V1Pod }
  | { ok: false; reason: "timeout" | "ended"; pod: V1Pod | undefined }
) & { timeline?: WaitTimeline };

/**
 * waitForRunning follows one claimed pod (a watch, no polling) from the version the claim wrote
 * until its sandbox is running with its post-start hooks done, or it left the sandbox's path
 * (failed, released, deleted, reclaimed), or timeoutMs passes.
 *
 * The waiter also drives its sandbox: each version still on the way runs the per-pod steps
 * (complete the start, run the hooks) on that version, one run at a time and always on the newest
 * version seen. The audit-triggered run does the same from a fresh read; whichever writes second
 * fails its precondition. The waiter saves the start the audit event's trip and two reads (ADR 0010).
 */
export async function waitForRunning(
  deps: ApiDeps,
  claimed: V1Pod,
  pool: SandboxPool,
  timeoutMs: number,
): Promise<WaitOutcome> {
  const id = claimed.metadata?.labels?.[SANDBOX_ID_LABEL];
  const namespace = claimed.metadata?.namespace ?? "";
  const name = claimed.metadata?.name ?? "";
  let last: V1Pod | undefined = claimed;
  let outcome: WaitOutcome | undefined;
  const judge = (pod: V1Pod | undefined): WaitOutcome | undefined => {
    if (!pod || pod.metadata?.labels?.[SANDBOX_ID_LABEL] !== id) return { ok: false, reason: "ended", pod };
    const phase = sandboxPhaseOf(pod);
    const hooksPending = pod.metadata?.annotations?.[POST_START_HOOKS_ANNOTATION] !== undefined;
    if (phase === SANDBOX_PHASE.RUNNING) return hooksPending ? undefined : { ok: true, pod };
    if (phase !== SANDBOX_PHASE.STARTING) return { ok: false, reason: "ended", pod };
    return undefined;
  };
  const t0 = performance.now();
  let kubeletMs: number | undefined;
  const advance = latestOnly(async ({ pod, at }: { pod: V1Pod; at: number }) => {
    try {
      const report = await runPodSteps(deps, pool, pod, true);
      const started = report.steps.some(
        (s) => s.step === "complete-starting" && s.outcomes.some((o) => o.result === "done"),
      );
      if (started) kubeletMs ??= at - t0;
    } catch (e) {
      deps.log.warn({ pod: `${namespace}/${name}`, err: String(e) }, "waiter could not advance the sandbox");
    }
  });
  const seen = (pod: V1Pod | undefined) => {
    last = pod;
    outcome = judge(pod);
    if (!outcome && pod) advance({ pod, at: performance.now() });
  };
  outcome = judge(claimed);
  if (!outcome) advance({ pod: claimed, at: t0 });
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    if (!outcome)
      await followPod(
        deps,
        claimed,
        (pod) => {
          seen(pod);
          return outcome !== undefined;
        },
        controller.signal,
      );
  } finally {
    clearTimeout(timer);
  }
  const timeline = { ...(kubeletMs === undefined ? {} : { kubeletMs }), endMs: performance.now() - t0 };
  return { ...(outcome ?? { ok: false, reason: "timeout", pod: last }), timeline };
}
