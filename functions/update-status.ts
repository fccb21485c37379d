import { planStatus } from "../lib/reconcile/status.ts";
import type { Step } from "./step.ts";

/** updateStatus writes the pool status when it changed, with phase Events (see planStatus). */
export const updateStatus: Step = {
  name: "update-status",
  plan: async (deps, { pool, pods }) => planStatus(pool, pods, deps.now()),
};
