import { idleImages } from "../lib/pool/render-pod.ts";
import { isRunningSandbox, planIdleRelease } from "../lib/reconcile/idle-release.ts";
import type { Step } from "./step.ts";

/**
 * idleRelease releases running sandboxes idle past their idle timeout (see planIdleRelease).
 * With a pulled activity source configured it pulls first (only when the pool runs a sandbox);
 * when the pull fails it plans nothing for the pool: a source that is down must never make
 * sandboxes look idle.
 */
export const idleRelease: Step = {
  name: "idle-release",
  plan: async (deps, { pool, pods }) => {
    if (!deps.pullActivity || !pods.some(isRunningSandbox))
      return planIdleRelease(pods, idleImages(pool), deps.now());
    let pulled: ReadonlyMap<string, Date>;
    try {
      pulled = await deps.pullActivity();
    } catch (e) {
      deps.log.warn(
        { pool: `${pool.metadata?.namespace}/${pool.metadata?.name}`, err: String(e) },
        "idle-release: activity source failed; releasing nothing",
      );
      return [];
    }
    return planIdleRelease(pods, idleImages(pool), deps.now(), pulled);
  },
};
