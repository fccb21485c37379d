import { lazyPodReset } from "../../lib/pool/render-pod.ts";
import {
  idleReleaseMode,
  isRunningSandbox,
  planIdleRelease,
  reportedOnly,
} from "../../lib/reconcile/idle-release.ts";
import { withoutHeldPods } from "../snapshots/held-pods.ts";
import type { Step } from "./step.ts";

/**
 * idleRelease releases running sandboxes idle past their idle timeout (see planIdleRelease), with
 * activity as the host's idle-release mode says (IdleReleaseMode; default: pulled with a pulled
 * source, else reported). In pulled mode it pulls first (only when the pool runs a sandbox); when
 * the pull fails it plans nothing for the pool: a source that is down must never make sandboxes
 * look idle. In reported mode a sandbox without reported activity stays, and the host says once
 * why.
 */
export const idleRelease: Step = {
  name: "idle-release",
  plan: async (deps, { pool, pods: all }) => {
    // A sandbox a pause holds is released by its pause, not as idle.
    const pods = await withoutHeldPods(deps, all);
    // The hosts refuse "pulled" without a source at start; should one get here, nothing pulled counts.
    const resolved = idleReleaseMode(deps.idleRelease, deps.pullActivity !== undefined, "pullActivity");
    const mode = resolved.ok ? resolved.mode : "reported";
    if (mode === "off") return [];
    if (mode === "reported") {
      const kept = reportedOnly(pods, deps.now());
      if (kept.unreported > 0 && !deps.noticed.has("idle-release:unreported")) {
        deps.noticed.add("idle-release:unreported");
        deps.log.warn(
          { pool: `${pool.metadata?.namespace}/${pool.metadata?.name}`, sandboxes: kept.unreported },
          'idle-release: sandboxes past their idle timeout have no reported activity, so they are not released (idle-release mode "reported": report activity with POST /v1/activity, configure a pulled activity source, or choose "since-start")',
        );
      }
      return planIdleRelease(kept.pods, lazyPodReset(pool), deps.now());
    }
    if (mode === "since-start" || !deps.pullActivity || !pods.some(isRunningSandbox))
      return planIdleRelease(pods, lazyPodReset(pool), deps.now());
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
    return planIdleRelease(pods, lazyPodReset(pool), deps.now(), pulled);
  },
};
