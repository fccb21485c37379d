import { creationBlock } from "../lib/pool/creation-block.ts";
import { scaleDownPolicyFor } from "../lib/pool/scale-plan.ts";
import { planMaterialise } from "../lib/reconcile/materialise.ts";
import type { Step } from "./step.ts";

/**
 * materialisePool keeps spec.replicas pods and handles pool deletion (see planMaterialise); a
 * pool that cannot render pods yet (creationBlock) creates none.
 */
export const materialisePool: Step = {
  name: "materialise-pool",
  plan: async (deps, { pool, pods, foreign, env, template }) =>
    planMaterialise(
      pool,
      pods,
      scaleDownPolicyFor(pool, env),
      deps.now(),
      creationBlock(pool, template),
      foreign,
    ),
};
