import { lazyPodReset } from "../../lib/pool/render-pod.ts";
import { planFailures } from "../../lib/reconcile/failures.ts";
import type { Step } from "./step.ts";

/** handleFailures deletes failed pods and releases restarted sandboxes (see planFailures). */
export const handleFailures: Step = {
  name: "handle-failures",
  plan: async (deps, { pool, pods }) => planFailures(pods, lazyPodReset(pool), deps.now()),
};
