import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_ID_LABEL } from "../lib/crd/keys.ts";
import { isConflict, isNotFound, KubeError } from "../lib/kube/errors.ts";
import { type ClaimOptions, claimIntent } from "../lib/lifecycle/claim-intent.ts";
import { toJsonPatch } from "../lib/lifecycle/intent-patch.ts";
import type { HostDeps } from "./host-deps.ts";

/** ClaimResult is the claimed pod, or why this pod could not be claimed (try another). */
export type ClaimResult =
  | { ok: true; pod: V1Pod }
  | { ok: false; reason: "conflict" | "gone" | "refused"; detail: string };

/**
 * claimSandbox turns one idle pod into a starting sandbox with a single preconditioned patch
 * (resourceVersion and the idle phase are tested), so two callers can never claim the same pod:
 * the loser gets a conflict and should try another candidate. A refused claim (the pod is not
 * idle, bad options) writes nothing. A claim that got no clear answer (a timeout, a 5xx) is
 * checked with one read: if it landed, it is ours.
 */
export async function claimSandbox(deps: HostDeps, pod: V1Pod, options: ClaimOptions): Promise<ClaimResult> {
  const intent = claimIntent(pod, options, deps.now());
  if (!intent.ok) return { ok: false, reason: "refused", detail: intent.reason };
  try {
    const claimed = await deps.kube.patchPod(
      pod.metadata?.namespace ?? "",
      pod.metadata?.name ?? "",
      toJsonPatch(pod, intent.intent),
    );
    return { ok: true, pod: claimed };
  } catch (e) {
    if (isConflict(e)) return { ok: false, reason: "conflict", detail: String(e) };
    if (isNotFound(e)) return { ok: false, reason: "gone", detail: String(e) };
    // No answer, or a server error: the patch may have landed all the same. If the pod now
    // carries this sandbox's id, it is ours; claiming another pod would leave this one orphaned.
    const ours = await landedAnyway(deps, pod, options.sandboxId, e);
    if (ours) return { ok: true, pod: ours };
    throw e;
  }
}

/** landedAnyway re-reads the pod after a claim that got no clear answer: the pod if the claim landed. */
async function landedAnyway(
  deps: HostDeps,
  pod: V1Pod,
  sandboxId: string,
  error: unknown,
): Promise<V1Pod | undefined> {
  const definite = error instanceof KubeError && error.status >= 400 && error.status < 500;
  if (definite) return undefined;
  const now = await deps.kube
    .getPod(pod.metadata?.namespace ?? "", pod.metadata?.name ?? "")
    .catch(() => undefined);
  return now?.metadata?.labels?.[SANDBOX_ID_LABEL] === sandboxId ? now : undefined;
}
