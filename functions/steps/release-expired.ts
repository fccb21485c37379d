import { lazyPodReset } from "../../lib/pool/render-pod.ts";
import { planLifetimeRelease } from "../../lib/reconcile/lifetime-release.ts";
import type { Step } from "./step.ts";

/** releaseExpired releases running sandboxes past their end-at (see planLifetimeRelease). */
export const releaseExpired: Step = {
  name: "release-expired",
  plan: async (deps, { pool, pods }) => planLifetimeRelease(pods, lazyPodReset(pool), deps.now()),
};
