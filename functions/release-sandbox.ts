import type { V1Pod } from "@kubernetes/client-node";
import type { SandboxPool } from "../lib/crd/sandbox-pool.ts";
import { isConflict, isNotFound } from "../lib/kube/errors.ts";
import { toJsonPatch } from "../lib/lifecycle/intent-patch.ts";
import { type ReleaseOptions, releaseIntent } from "../lib/lifecycle/release-intent.ts";
import { podReset } from "../lib/pool/render-pod.ts";
import type { HostDeps } from "./host-deps.ts";

export type ReleaseResult =
  | { ok: true; pod: V1Pod }
  | { ok: false; reason: "conflict" | "gone" | "refused"; detail: string };

/**
 * releaseSandbox moves a running (or still starting) sandbox to Stopping with its stop metadata
 * and the pool's reset (idle images, every container restarted, or a replacement) as targets, in one preconditioned patch; complete-stopping later
 * writes the record and returns the pod to Idle. A conflict means the pod changed since it was
 * read: the caller re-reads and decides again (or, for opportunistic releases, leaves it to the
 * next run).
 */
export async function releaseSandbox(
  deps: HostDeps,
  pool: SandboxPool,
  pod: V1Pod,
  options: Omit<ReleaseOptions, "idleImages" | "replace" | "revision">,
): Promise<ReleaseResult> {
  const intent = releaseIntent(pod, { ...options, ...podReset(pool) }, deps.now());
  if (!intent.ok) return { ok: false, reason: "refused", detail: intent.reason };
  try {
    const released = await deps.kube.patchPod(
      pod.metadata?.namespace ?? "",
      pod.metadata?.name ?? "",
      toJsonPatch(pod, intent.intent),
    );
    return { ok: true, pod: released };
  } catch (e) {
    if (isConflict(e)) return { ok: false, reason: "conflict", detail: String(e) };
    if (isNotFound(e)) return { ok: false, reason: "gone", detail: String(e) };
    throw e;
  }
}
