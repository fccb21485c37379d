// The end of a resumed sandbox: when its pod stops for good (killed, expired, failed: any stop but
// a pause), its SandboxSnapshot goes before the pod returns to idle, so the snapshot agent deletes
// the images it ran on. Only pods with an incarnation (resumed) cost a request.
import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_ID_LABEL, STOP_REASON, STOP_REASON_ANNOTATION } from "../../lib/crd/keys.ts";
import type { Action } from "../../lib/kube/action.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import { incarnationOf } from "../../lib/lifecycle/incarnation.ts";
import { gateActions } from "../gate-actions.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * releaseSnapshots deletes the snapshot of every resumed sandbox whose stopping pod `actions` write
 * to, and keeps only the actions whose snapshot is gone (a delete that failed leaves its pod
 * stopping: the next run tries again). A snapshot in the middle of another pause (a new
 * generation) belongs to the same sandbox and goes too: the sandbox has ended.
 */
export function releaseSnapshots(
  deps: Pick<HostDeps, "kube" | "log">,
  actions: readonly Action[],
  pods: readonly V1Pod[],
): Promise<Action[]> {
  return gateActions(actions, pods, async (pod) => {
    const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL];
    const paused = pod.metadata?.annotations?.[STOP_REASON_ANNOTATION] === STOP_REASON.PAUSED;
    if (!id || paused || incarnationOf(pod) === 0) return true;
    return deps.kube.deleteSnapshot(pod.metadata?.namespace ?? "", id).then(
      () => true,
      (e: unknown) => {
        if (isNotFound(e)) return true;
        deps.log.warn(
          { sandboxId: id, err: String(e) },
          "release: the resumed sandbox's snapshot was not deleted",
        );
        return false;
      },
    );
  });
}
