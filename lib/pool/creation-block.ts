// Why a pool must not create Pods right now. A Pod rendered from a pool whose template was never
// copied, or whose pod template has no usable container, would be refused by the apiserver at
// best and run the wrong thing at worst; so such a pool creates nothing and says why (the
// ReplicaFailure condition, see pool-status.ts).

import type { SandboxPool } from "../crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import { podTemplateIssues } from "./pod-template-checks.ts";
import { templateCopyNeeded } from "./template-copy.ts";

/** REPLICA_FAILURE_REASON lists why a pool's Pods are not being created (ReplicaFailure reasons). */
export const REPLICA_FAILURE_REASON = {
  /** TEMPLATE_NOT_FOUND: spec.templateName names a SandboxTemplate that does not exist. */
  TEMPLATE_NOT_FOUND: "TemplateNotFound",
  /** TEMPLATE_NOT_COPIED: the template exists but its copy into the pool is still to be written. */
  TEMPLATE_NOT_COPIED: "TemplateNotCopied",
  /** INVALID_POD_TEMPLATE: spec.template cannot become a Pod (no containers, no image). */
  INVALID_POD_TEMPLATE: "InvalidPodTemplate",
  /** FAILED_CREATE: the apiserver refused a Pod create (quota, admission, invalid spec, …). */
  FAILED_CREATE: "FailedCreate",
} as const;

/** CreationBlock is why no Pod may be created, with a message an operator can act on. */
export interface CreationBlock {
  reason: (typeof REPLICA_FAILURE_REASON)[keyof typeof REPLICA_FAILURE_REASON];
  message: string;
}

/**
 * creationBlock says why the pool must not create Pods, or undefined when it may. `template` is
 * the pool's template as read for this run: null when it does not exist, undefined when it was
 * not read (the pool needed no copy).
 */
export function creationBlock(
  pool: Pick<SandboxPool, "metadata" | "spec">,
  template: SandboxTemplate | null | undefined,
): CreationBlock | undefined {
  const name = pool.spec.templateName ?? "";
  if (templateCopyNeeded(pool)) {
    return template === null
      ? {
          reason: REPLICA_FAILURE_REASON.TEMPLATE_NOT_FOUND,
          message: `SandboxTemplate "${name}" does not exist; no pods are created until it does`,
        }
      : {
          reason: REPLICA_FAILURE_REASON.TEMPLATE_NOT_COPIED,
          message: `SandboxTemplate "${name}" is being copied into the pool; pods follow`,
        };
  }
  const issues = podTemplateIssues(pool.spec, "spec");
  if (issues.length === 0) return undefined;
  return {
    reason: REPLICA_FAILURE_REASON.INVALID_POD_TEMPLATE,
    message: `pods cannot be rendered: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`,
  };
}

/** CreateResults are the outcomes of a run's Pod creates: how many went through, the first error. */
export interface CreateResults {
  created: number;
  error?: string;
}

/**
 * replicaFailure decides the ReplicaFailure condition for a run: the block when Pods must not be
 * created; FailedCreate with the apiserver's answer when a create was refused; cleared (null)
 * when a create went through or no Pod is missing; unknown (undefined: keep what is stored)
 * when Pods are missing but none was attempted (their slots are still being freed).
 */
export function replicaFailure(
  block: CreationBlock | undefined,
  creates: CreateResults,
  missing: number,
): CreationBlock | null | undefined {
  if (block) return block;
  if (creates.error) return { reason: REPLICA_FAILURE_REASON.FAILED_CREATE, message: creates.error };
  if (creates.created > 0 || missing <= 0) return null;
  return undefined;
}
