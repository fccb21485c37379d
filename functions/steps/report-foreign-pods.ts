import { planForeignPods } from "../../lib/reconcile/foreign-pods.ts";
import type { Step } from "./step.ts";

/**
 * reportForeignPods says once, with a Warning Event on the pool, of each pod that carries the
 * pool's label without the pool controlling it, which every other step ignores (see planForeignPods).
 */
export const reportForeignPods: Step = {
  name: "report-foreign-pods",
  plan: async (_deps, { pool, foreign }) => planForeignPods(pool, foreign ?? []),
};
