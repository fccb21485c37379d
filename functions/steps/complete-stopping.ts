import { planServedIdle, planStopping } from "../../lib/reconcile/stopping.ts";
import { targetDigests } from "../digests.ts";
import { releasePolicies } from "../egress/release-policies.ts";
import { releaseSnapshots } from "../snapshots/release-snapshots.ts";
import type { Step } from "./step.ts";

/**
 * completeStopping records finished sandboxes and returns their pods to Idle, or deletes those
 * to be replaced (see planStopping), and replaces idle pods no claim can take (planServedIdle).
 * A sandbox with egress rules of its own has its NetworkPolicy deleted and proven gone first
 * (releasePolicies): until then its pod stays stopping, egress label and all. A resumed sandbox
 * that ended has its SandboxSnapshot deleted first too (releaseSnapshots).
 */
export const completeStopping: Step = {
  name: "complete-stopping",
  plan: async (deps, { pool, pods }) => [
    ...(await releaseSnapshots(
      deps,
      await releasePolicies(
        deps,
        planStopping(pool, pods, await targetDigests(deps, pods), deps.now()),
        pods,
      ),
      pods,
    )),
    ...planServedIdle(pods),
  ],
};
