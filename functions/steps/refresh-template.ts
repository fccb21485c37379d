import { orMissing } from "../../lib/kube/errors.ts";
import { planTemplateRefresh } from "../../lib/reconcile/template-copy.ts";
import { type Step, StepRefused } from "./step.ts";

/**
 * refreshTemplate re-renders a standalone pool from its template's current revision, with its
 * recorded overrides re-applied (planTemplateRefresh). It runs only when an operator asks for it
 * (never in a reconcile), so a template edit reaches a pool only on purpose.
 */
export const refreshTemplate: Step = {
  name: "refresh-template",
  plan: async (deps, { pool }) => {
    const name = pool.spec.templateName;
    const template = name ? ((await orMissing(deps.kube.getTemplate(name))) ?? null) : null;
    const plan = planTemplateRefresh(pool, template);
    if (!plan.ok) throw new StepRefused(plan.reason);
    return plan.actions;
  },
};
