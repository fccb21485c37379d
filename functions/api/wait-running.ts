import type { V1Pod } from "@kubernetes/client-node";
import { POST_START_HOOKS_ANNOTATION, SANDBOX_ID_LABEL, SANDBOX_PHASE } from "../../lib/api/keys.ts";
import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import { sandboxPhaseOf } from "../../lib/sandbox/inplace-state.ts";
import { retryDelay } from "../../lib/util/backoff.ts";
import { latestOnly } from "../../lib/util/latest-only.ts";
import { runPodSteps } from "../reconcile-pod.ts";
import type { ApiDeps } from "./deps.ts";
import { IDLE_WATCH_SECONDS } from "./idle-dispatch.ts";

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

/** QUICK_END_MS: a watch that ends sooner than this is paced before it is opened again. */
const QUICK_END_MS = 1000;

/** pause waits ms, or less when signal aborts first. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * waitForRunning watches one claimed pod (no polling) from the version the claim wrote until its
 * sandbox is running with its post-start hooks done, or it left the sandbox's path (failed,
 * released, deleted, reclaimed), or timeoutMs passes. Watches the apiserver ends early are
 * resumed from the last version seen.
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
  // The version the next watch resumes from: the last event's, bookmarks included (kept apart from
  // the pods, which the steps may be planning from).
  let resumeFrom = claimed.metadata?.resourceVersion;
  let reread = false;
  let quick = 0;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    while (!outcome && !controller.signal.aborted) {
      if (reread) {
        // The watch said it cannot go on from resumeFrom (e.g. 410 Gone), or failed: start over
        // from a read. A read that fails too (an outage) is tried again after a pause: the sandbox
        // is claimed, so the wait goes on, and at its end answers with what it last saw.
        const read = await orMissing<V1Pod>(deps.kube.getPod(namespace, name)).then(
          (pod) => ({ ok: true as const, pod }),
          (err: unknown) => ({ ok: false as const, err }),
        );
        if (!read.ok) {
          deps.log.debug(
            { pod: `${namespace}/${name}`, err: String(read.err) },
            "waiter could not read its pod",
          );
          await pause(retryDelay(quick++), controller.signal);
          continue;
        }
        reread = false;
        seen(read.pod);
        resumeFrom = last?.metadata?.resourceVersion;
        if (outcome || !last) break;
      }
      const opened = Date.now();
      const failed = await deps
        .watch(
          {
            method: "GET",
            path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
            query: {
              fieldSelector: `metadata.name=${name}`,
              resourceVersion: resumeFrom,
              allowWatchBookmarks: "true",
              // Renewed now and then, like the idle watch: a dead stream is noticed and reopened.
              timeoutSeconds: String(IDLE_WATCH_SECONDS),
            },
          },
          (event) => {
            if (event.type === "ERROR") {
              reread = true;
              return true;
            }
            const pod = event.object as V1Pod;
            resumeFrom = pod.metadata?.resourceVersion ?? resumeFrom;
            if (event.type === "BOOKMARK") return false;
            seen(event.type === "DELETED" ? undefined : pod);
            return outcome !== undefined;
          },
          controller.signal,
        )
        .then(
          () => false,
          (e: unknown) => {
            deps.log.debug(
              { pod: `${namespace}/${name}`, err: String(e) },
              "waiter's watch failed; reading again",
            );
            return true;
          },
        );
      if (outcome || controller.signal.aborted) break;
      // A watch that failed, or ended at once, is opened again after a pause that grows while
      // they keep doing so, never in a tight loop; a failed one starts over from a read.
      if (failed) reread = true;
      quick = Date.now() - opened < QUICK_END_MS ? quick + 1 : 0;
      if (quick > 0) await pause(retryDelay(quick - 1), controller.signal);
    }
    if (!last) outcome ??= { ok: false, reason: "ended", pod: undefined };
  } finally {
    clearTimeout(timer);
  }
  const timeline = { ...(kubeletMs === undefined ? {} : { kubeletMs }), endMs: performance.now() - t0 };
  return { ...(outcome ?? { ok: false, reason: "timeout", pod: last }), timeline };
}
