import { planServedIdle, planStopping } from "../../lib/reconcile/stopping.ts";
import { targetDigests } from "../digests.ts";
import type { Step } from "./step.ts";

/**
 * completeStopping records finished sandboxes and returns their pods to Idle, or deletes those
 * to be replaced (see planStopping), and replaces idle pods no claim can take (planServedIdle).
 */
export const completeStopping: Step = {
  name: "complete-stopping",
  plan: async (deps, { pool, pods }) => [
    ...planStopping(pool, pods, await targetDigests(deps, pods), deps.now()),
    ...planServedIdle(pods),
  ],
};
