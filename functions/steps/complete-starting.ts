import { planStarting } from "../../lib/reconcile/starting.ts";
import { targetDigests } from "../digests.ts";
import type { Step } from "./step.ts";

/** completeStarting finishes Starting → Running, times out stuck starts, diagnoses (see planStarting). */
export const completeStarting: Step = {
  name: "complete-starting",
  plan: async (deps, { pool, pods, waiter }) =>
    planStarting(pool, pods, await targetDigests(deps, pods), deps.now(), { leaveToWaiters: !waiter }),
};
