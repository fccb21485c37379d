import type { SandboxPool } from "../crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import { type Action, poolTarget, testVersion } from "../kube/action.ts";
import { envOwnerOf } from "../membership/env-ownership.ts";
import {
  copyTemplate,
  refreshFromTemplate,
  templateCopyNeeded,
  templateCopyOps,
} from "../pool/template-copy.ts";

function versionNote(template: SandboxTemplate): string {
  return template.spec.version ? ` (version ${template.spec.version})` : "";
}

/**
 * planTemplateCopy writes the template copy a pool was stored without (the defaulting webhook
 * fails open, or the pool predates it), under a resourceVersion test. Nothing when the pool needs
 * no copy or its template does not exist (`template` null: the status says so, no pods are made).
 */
export function planTemplateCopy(pool: SandboxPool, template: SandboxTemplate | null | undefined): Action[] {
  if (!template || !templateCopyNeeded(pool)) return [];
  const ops = templateCopyOps(pool, copyTemplate(pool, template));
  const note = `copied SandboxTemplate "${pool.spec.templateName}"${versionNote(template)} into the pool`;
  return [
    {
      target: poolTarget(pool),
      why: note,
      write: { op: "patch", patch: [testVersion(pool), ...ops] },
      event: { type: "Normal", reason: "TemplateCopied", action: "CopyTemplate", note },
    },
  ];
}

/** RefreshPlan is a refresh's write, or why the pool cannot be refreshed. */
export type RefreshPlan = { ok: true; actions: Action[] } | { ok: false; reason: string };

/**
 * planTemplateRefresh re-renders a standalone pool from its template's current revision with its
 * recorded overrides re-applied (refreshFromTemplate), on an operator's request. Env members are
 * refused (their Env renders them), as are pools without a template or whose template is gone.
 * A pool that already matches gets no write.
 */
export function planTemplateRefresh(pool: SandboxPool, template: SandboxTemplate | null): RefreshPlan {
  const env = envOwnerOf(pool);
  if (env)
    return {
      ok: false,
      reason: `pool is a member of SandboxEnv "${env}", which renders it; change the Env instead`,
    };
  const name = pool.spec.templateName;
  if (!name) return { ok: false, reason: "pool has no spec.templateName to refresh from" };
  if (!template) return { ok: false, reason: `SandboxTemplate "${name}" does not exist` };
  const refreshed = refreshFromTemplate(pool, template);
  if (!refreshed.ok) return refreshed;
  const ops = templateCopyOps(pool, refreshed.copy);
  if (ops.length === 0) return { ok: true, actions: [] };
  const note = `refreshed from SandboxTemplate "${name}"${versionNote(template)}, overrides re-applied`;
  return {
    ok: true,
    actions: [
      {
        target: poolTarget(pool),
        why: note,
        write: { op: "patch", patch: [testVersion(pool), ...ops] },
        event: { type: "Normal", reason: "TemplateRefreshed", action: "RefreshTemplate", note },
      },
    ],
  };
}
