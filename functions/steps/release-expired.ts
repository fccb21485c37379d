import { lazyPodReset } from "../../lib/pool/render-pod.ts";
import { planLifetimeRelease } from "../../lib/reconcile/lifetime-release.ts";
import { withoutHeldPods } from "../snapshots/held-pods.ts";
import type { Step } from "./step.ts";

/**
 * releaseExpired releases running sandboxes past their end-at (see planLifetimeRelease), but not
 * one a pause holds (withoutHeldPods): that pause releases it.
 */
export const releaseExpired: Step = {
  name: "release-expired",
  plan: async (deps, { pool, pods }) =>
    planLifetimeRelease(await withoutHeldPods(deps, pods), lazyPodReset(pool), deps.now()),
};
