import type { V1Pod } from "@kubernetes/client-node";
import { POST_START_HOOKS_ANNOTATION, SANDBOX_ID_LABEL, SANDBOX_PHASE } from "../../lib/api/keys.ts";
import { sandboxPhaseOf } from "../../lib/sandbox/inplace-state.ts";
import type { ApiDeps } from "./deps.ts";

export type WaitOutcome =
  | { ok: true; pod: V1Pod }
  | { ok: false; reason: "timeout" | "ended"; pod: V1Pod | undefined };

/**
 * waitForRunning watches one claimed pod (no polling) from the version the claim wrote until its
 * sandbox is running with its post-start hooks done, or it left the sandbox's path (failed, released, deleted, reclaimed), or
 * timeoutMs passes. Watches the apiserver ends early are resumed from the last version seen.
 */
export async function waitForRunning(deps: ApiDeps, claimed: V1Pod, timeoutMs: number): Promise<WaitOutcome> {
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
  outcome = judge(claimed);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    while (!outcome && !controller.signal.aborted) {
      await deps.watch(
        {
          method: "GET",
          path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
          query: {
            fieldSelector: `metadata.name=${name}`,
            resourceVersion: last?.metadata?.resourceVersion,
            allowWatchBookmarks: "true",
          },
        },
        (event) => {
          if (event.type === "ERROR") return true;
          const pod = event.object as V1Pod;
          if (event.type === "BOOKMARK") {
            if (last?.metadata) last.metadata.resourceVersion = pod.metadata?.resourceVersion;
            return false;
          }
          last = event.type === "DELETED" ? undefined : pod;
          outcome = judge(last);
          return outcome !== undefined;
        },
        controller.signal,
      );
      if (!last) outcome ??= { ok: false, reason: "ended", pod: undefined };
    }
  } finally {
    clearTimeout(timer);
  }
  return outcome ?? { ok: false, reason: "timeout", pod: last };
}
