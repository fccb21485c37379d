import { planStopping } from "../lib/reconcile/stopping.ts";
import { targetDigests } from "./digests.ts";
import type { Step } from "./step.ts";

/** completeStopping records finished sandboxes and returns their pods to Idle (see planStopping). */
export const completeStopping: Step = {
  name: "complete-stopping",
  plan: async (deps, { pods }) => planStopping(pods, await targetDigests(deps, pods), deps.now()),
};
