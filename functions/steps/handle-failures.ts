import { lazyPodReset } from "../../lib/pool/render-pod.ts";
import { planFailures } from "../../lib/reconcile/failures.ts";
import { heldPods } from "../snapshots/held-pods.ts";
import type { Step } from "./step.ts";

/**
 * handleFailures deletes failed pods and releases restarted sandboxes (see planFailures), but for
 * the restarts of sandboxes a pause holds (heldPods): that pause releases them as Paused.
 */
export const handleFailures: Step = {
  name: "handle-failures",
  plan: async (deps, { pool, pods }) =>
    planFailures(pods, lazyPodReset(pool), deps.now(), await heldPods(deps, pods)),
};
