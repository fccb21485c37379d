import { partitionPods } from "../../lib/membership/pod-ownership.ts";
import { planFinalizeDeleted } from "../../lib/reconcile/finalize-deleted.ts";
import type { Step } from "./step.ts";

/**
 * finalizeDeleted records and releases the pool's own pods being deleted by anyone (see
 * planFinalizeDeleted). A foreign pod (one the pool does not control) is never recorded or
 * released: its sandbox id and finalizer are not ours.
 */
export const finalizeDeleted: Step = {
  name: "finalize-deleted",
  plan: async (deps, { pool, pods }) => planFinalizeDeleted(partitionPods(pool, pods).owned, deps.now()),
};
