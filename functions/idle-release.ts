import { idleImages } from "../lib/pool/render-pod.ts";
import { planIdleRelease } from "../lib/reconcile/idle-release.ts";
import type { Step } from "./step.ts";

/** idleRelease releases running sandboxes idle past their idle timeout (see planIdleRelease). */
export const idleRelease: Step = {
  name: "idle-release",
  plan: async (deps, { pool, pods }) => planIdleRelease(pods, idleImages(pool), deps.now()),
};
