import { planTemplateCopy } from "../../lib/reconcile/template-copy.ts";
import type { Step } from "./step.ts";

/**
 * copyTemplate writes the template copy a pool was stored without (see planTemplateCopy); the
 * snapshot read the template because the pool needed it.
 */
export const copyTemplate: Step = {
  name: "copy-template",
  plan: async (_deps, { pool, template }) => planTemplateCopy(pool, template),
};
