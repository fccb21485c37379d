import type { CreateResults } from "../../lib/pool/creation-block.ts";
import { planStatus } from "../../lib/reconcile/status.ts";
import type { Step, StepResult } from "./step.ts";

/** createResults reads this run's Pod creates from the materialise step's outcomes. */
function createResults(earlier: readonly StepResult[] = []): CreateResults {
  const creates = earlier
    .flatMap((s) => s.outcomes)
    .filter((o) => o.op === "create" && o.target.startsWith("Pod/"));
  const error = creates.find((o) => o.result === "error")?.error;
  return {
    created: creates.filter((o) => o.result === "done" || o.result === "exists").length,
    ...(error ? { error } : {}),
  };
}

/**
 * updateStatus writes the pool status when it changed, with the ReplicaFailure condition when
 * Pods cannot be created (a refused create of this run included) and Events (see planStatus).
 */
export const updateStatus: Step = {
  name: "update-status",
  plan: async (deps, { pool, pods, env, template }, earlier = []) =>
    planStatus(pool, pods, deps.now(), {
      template,
      env,
      creates: createResults(earlier),
      templateCopied: earlier.some(
        (s) => s.step === "copy-template" && s.outcomes.some((o) => o.result === "done"),
      ),
    }),
};
