import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import { planTemplateStatus } from "../../lib/template/template-status.ts";
import type { HostDeps } from "../host-deps.ts";
import { type ActionOutcome, execute } from "../steps/execute.ts";

/** TemplateSnapshot is what a template's run decides from: the template and the cluster's pools. */
export interface TemplateSnapshot {
  template: SandboxTemplate;
  /** pools are every pool of the cluster (the run looks at those whose templateName names it). */
  pools: readonly SandboxPool[];
}

/** TemplateReport says what one template run did. */
export interface TemplateReport {
  template: string;
  found: boolean;
  outcomes: ActionOutcome[];
}

/**
 * reconcileTemplate writes a SandboxTemplate's status conditions (Available, Progressing,
 * Degraded: planTemplateStatus) when they changed. Without a snapshot (an audit event named the
 * template) it reads the template from etcd, so its write is tested against the version just
 * written, and the pools of every namespace from the apiserver's watch cache (a stale list only
 * delays a condition to the next run: the tick's, or the template's next write). The tick passes
 * its own read. The write is tested against the template's resourceVersion: a run that lost to
 * another (a second host) leaves it to that one.
 */
export async function reconcileTemplate(
  deps: HostDeps,
  name: string,
  snapshot?: TemplateSnapshot,
): Promise<TemplateReport> {
  const report: TemplateReport = { template: name, found: false, outcomes: [] };
  const template = snapshot?.template ?? (await orMissing(deps.kube.getTemplate(name)));
  if (!template) return report;
  report.found = true;
  const pools = snapshot?.pools ?? (await deps.kube.listPools(undefined, { cached: true })).items;
  report.outcomes = await execute(deps, planTemplateStatus(template, pools, deps.now()));
  for (const o of report.outcomes) {
    if (o.result === "error") deps.log.warn({ template: name, err: o.error }, o.why);
    else if (o.result === "done") deps.log.info({ template: name }, o.why);
  }
  return report;
}
