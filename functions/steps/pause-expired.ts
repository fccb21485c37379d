import { SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import { autoPauseDue, autoPauseUntil } from "../../lib/reconcile/lifetime-release.ts";
import { isCommitted } from "../../lib/snapshots/snapshot-state.ts";
import { completePause } from "../snapshots/complete-pause.ts";
import { beginPause } from "../snapshots/pause-sandbox.ts";
import type { Step } from "./step.ts";

/**
 * pauseExpired pauses the running sandboxes past their end-at that asked to pause at their timeout
 * (E2B's autoPause; autoPauseDue): it begins their pause (beginPause: the snapshot agent commits),
 * and on a later run finishes a committed one (completePause). Its writes are the snapshot's, made
 * here (no pod actions): the pod is released by completePause, or, if the pause cannot complete
 * within the grace (its deadline, autoPauseUntil), by release-expired. Failures are logged and retried by the next run.
 */
export const pauseExpired: Step = {
  name: "pause-expired",
  plan: async (deps, { pods }) => {
    for (const pod of autoPauseDue(pods, deps.now())) {
      const namespace = pod.metadata?.namespace ?? "";
      const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL] ?? "";
      try {
        const s = await deps.kube.getSnapshot(namespace, id).catch((e: unknown) => {
          if (isNotFound(e)) return undefined;
          throw e;
        });
        if (s && isCommitted(s)) await completePause(deps, s);
        else {
          const until = autoPauseUntil(pod)?.getTime() ?? deps.now().getTime();
          await beginPause(deps, pod, Math.max(1000, until - deps.now().getTime()));
        }
      } catch (e) {
        deps.log.warn({ sandboxId: id, err: String(e) }, "auto-pause: left to the next run");
      }
    }
    return [];
  },
};
