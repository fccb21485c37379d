// Which sandbox policies are left over: written for a create whose claim never landed (it failed,
// or its host crashed between the two writes), or not deleted at a release that crashed. A policy
// names its sandbox, so it is an orphan once no pod carries that sandbox's id; a young one may
// belong to a create still between its policy write and its claim, so it is left alone.
import { SANDBOX_ID_LABEL } from "../crd/keys.ts";

/**
 * ORPHAN_GRACE_MS: a policy younger than this is never an orphan. A create writes its policy
 * before it claims, and may then wait for an idle pod (waitTimeout, at most 5 minutes, plus the
 * claim's own deadline); twice that leaves room for a slow apiserver. A leftover selects no pod,
 * so waiting costs nothing but an object.
 */
export const ORPHAN_GRACE_MS = 600_000;

/** PolicyFacts is what deciding needs of a listed policy. */
export interface PolicyFacts {
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    creationTimestamp?: string | Date;
    resourceVersion?: string;
  };
}

/** claimKey keys a sandbox in a namespace: policies and pods meet there. */
export const claimKey = (namespace: string, sandboxId: string) => `${namespace}/${sandboxId}`;

/**
 * orphanCandidates are the policies older than `graceMs` whose sandbox no pod in `claimed` (keys
 * of claimKey) carries. They are candidates: the caller confirms each with a fresh read of the
 * pods before a delete preconditioned on the policy's version. A policy without a sandbox id or a
 * creation time is not ours to judge.
 */
export function orphanCandidates<T extends PolicyFacts>(
  policies: readonly T[],
  claimed: ReadonlySet<string>,
  now: Date,
  graceMs = ORPHAN_GRACE_MS,
): T[] {
  return policies.filter((p) => {
    const id = p.metadata?.labels?.[SANDBOX_ID_LABEL];
    const created = Date.parse(String(p.metadata?.creationTimestamp ?? ""));
    if (!id || !Number.isFinite(created)) return false;
    if (now.getTime() - created < graceMs) return false;
    return !claimed.has(claimKey(p.metadata?.namespace ?? "", id));
  });
}
