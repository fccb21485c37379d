import type { V1Pod } from "@kubernetes/client-node";
import { POST_START_HOOKS_ANNOTATION, SANDBOX_ID_LABEL, SANDBOX_PHASE } from "../../lib/crd/keys.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { isConflict, isNotFound } from "../../lib/kube/errors.ts";
import { handBackStartPatch } from "../../lib/lifecycle/hand-back-start.ts";
import { sandboxPhaseOf } from "../../lib/lifecycle/phase-label.ts";
import { hasPendingHooks } from "../../lib/lifecycle/post-start-hooks.ts";
import { latestOnly } from "../../lib/util/latest-only.ts";
import { followPod } from "../cache/follow-pod.ts";
import type { HostDeps } from "../host-deps.ts";
import { runPodSteps } from "../runs/reconcile-pod.ts";

/**
 * WaitTimeline says where a wait went, in ms from its start: when the watch delivered the version
 * the waiter completed the start from (the kubelet had run the new containers), and when the wait
 * ended. Operators see it as Server-Timing.
 */
export interface WaitTimeline {
  kubeletMs?: number;
  endMs: number;
}

/**
 * HOOK_RETRY_MS is how soon a waiter runs a version's hooks again after they failed and nothing
 * was written: envd in a real container listens a moment (1-2 s) after kubelet reports the
 * container running, and a failed hook leaves the pod as it was, so no new version would come.
 */
const HOOK_RETRY_MS = 500;

export type WaitOutcome = (
  | { ok: true; pod: V1Pod }
  | { ok: false; reason: "timeout" | "ended" | "stopping"; pod: V1Pod | undefined }
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
 *
 * When deps.stopping aborts (the host's shutdown grace is over, ADR 0029) a wait still under way
 * ends as "stopping" and first hands its start back (handBackStart): the reconcile runs of any host
 * then complete it, instead of leaving it until the waiter-until of a create that is gone.
 */
export async function waitForRunning(
  deps: HostDeps,
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
  const controller = new AbortController();
  let retry: ReturnType<typeof setTimeout> | undefined;
  const advance = latestOnly(async ({ pod, at }: { pod: V1Pod; at: number }) => {
    clearTimeout(retry);
    let wrote = true;
    try {
      const report = await runPodSteps(deps, pool, pod, true);
      wrote = report.steps.length > 0;
      const started = report.steps.some(
        (s) => s.step === "complete-starting" && s.outcomes.some((o) => o.result === "done"),
      );
      if (started) kubeletMs ??= at - t0;
    } catch (e) {
      deps.log.warn({ pod: `${namespace}/${name}`, err: String(e) }, "waiter could not advance the sandbox");
    }
    // Hooks that failed wrote nothing (before their deadline): try this version again soon.
    if (!wrote && !outcome && hasPendingHooks(pod) && !controller.signal.aborted)
      retry = setTimeout(() => advance({ pod: last ?? pod, at: performance.now() }), HOOK_RETRY_MS);
  });
  const seen = (pod: V1Pod | undefined) => {
    last = pod;
    outcome = judge(pod);
    if (!outcome && pod) advance({ pod, at: performance.now() });
  };
  outcome = judge(claimed);
  if (!outcome) advance({ pod: claimed, at: t0 });
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  let stopped = false;
  const stop = () => {
    stopped = true;
    controller.abort();
  };
  if (deps.stopping.aborted) stop();
  else deps.stopping.addEventListener("abort", stop, { once: true });
  try {
    if (!outcome && !controller.signal.aborted)
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
    clearTimeout(retry);
    deps.stopping.removeEventListener("abort", stop);
  }
  if (!outcome && stopped) await handBackStart(deps, last ?? claimed);
  const timeline = { ...(kubeletMs === undefined ? {} : { kubeletMs }), endMs: performance.now() - t0 };
  const unfinished = { ok: false as const, reason: stopped ? ("stopping" as const) : ("timeout" as const) };
  return { ...(outcome ?? { ...unfinished, pod: last }), timeline };
}

/**
 * handBackStart takes the waiter-until off a start its create stops waiting for
 * (handBackStartPatch), so the next reconcile run of any host completes it. A pod that moved on
 * (completed and released, claimed again, deleted) needs nothing; a write that fails otherwise is
 * logged, and the start is then completed once its waiter-until passes (ADR 0022).
 */
async function handBackStart(deps: HostDeps, pod: V1Pod): Promise<void> {
  const patch = handBackStartPatch(pod);
  if (!patch) return;
  const where = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
  try {
    await deps.kube.patchPod(pod.metadata?.namespace ?? "", pod.metadata?.name ?? "", patch);
    deps.log.info({ pod: where }, "waiting create stopped: its start is handed back to the reconcile runs");
  } catch (e) {
    if (isConflict(e) || isNotFound(e)) return;
    deps.log.warn(
      { pod: where, err: String(e) },
      "start not handed back; it completes after its waiter-until",
    );
  }
}
