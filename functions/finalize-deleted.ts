import { planFinalizeDeleted } from "../lib/reconcile/finalize-deleted.ts";
import type { Step } from "./step.ts";

/** finalizeDeleted records and releases pods being deleted by anyone (see planFinalizeDeleted). */
export const finalizeDeleted: Step = {
  name: "finalize-deleted",
  plan: async (deps, { pods }) => planFinalizeDeleted(pods, deps.now()),
};
