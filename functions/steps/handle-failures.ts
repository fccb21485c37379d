import { lazyPodReset } from "../../lib/pool/render-pod.ts";
import { planFailures } from "../../lib/reconcile/failures.ts";
import { heldPods } from "../snapshots/held-pods.ts";
import type { Step } from "./step.ts";

/**
 * handleFailures deletes failed pods and releases restarted sandboxes (see planFailures), but for
 * the restarts of sandboxes a pause holds (heldPods): that pause releases them as Paused. Only a
 * run with a failure to act on reads the snapshots of marked pods.
 */
export const handleFailures: Step = {
  name: "handle-failures",
  plan: async (deps, { pool, pods }) => {
    const reset = lazyPodReset(pool);
    const planned = planFailures(pods, reset, deps.now());
    if (planned.length === 0) return planned;
    return planFailures(pods, reset, deps.now(), await heldPods(deps, pods));
  },
};
