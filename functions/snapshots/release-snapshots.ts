// The release's half of a resumed sandbox's snapshot (lib/snapshots/release-decision.ts): when its
// pod stops for good (killed, expired, failed: any stop but a pause), its SandboxSnapshot goes
// before the pod returns to idle, so the snapshot agent deletes the images it ran on; a resume
// whose pod never ran gives the snapshot back to Paused, with no terminal record (the sandbox has
// not ended). Only pods of resumed sandboxes cost a request.
import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import { SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import type { Action } from "../../lib/kube/action.ts";
import { isConflict, isNotFound, orMissing } from "../../lib/kube/errors.ts";
import { needsSnapshotRead, snapshotAtRelease } from "../../lib/snapshots/release-decision.ts";
import { gateActions } from "../gate-actions.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * releaseSnapshots makes the snapshot write each stopping resumed pod of `actions` needs, and
 * keeps the actions whose write landed (one that failed leaves its pod stopping: the next run
 * tries again); an action whose sandbox goes back to Paused keeps no terminal record.
 */
export function releaseSnapshots(
  deps: Pick<HostDeps, "kube" | "log">,
  actions: readonly Action[],
  pods: readonly V1Pod[],
): Promise<Action[]> {
  return gateActions(actions, pods, async (pod, action) => {
    if (!needsSnapshotRead(pod)) return action;
    const namespace = pod.metadata?.namespace ?? "";
    const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL] ?? "";
    try {
      const s = await orMissing(deps.kube.getSnapshot(namespace, id));
      const decision = snapshotAtRelease(pod, s);
      if (!s || decision.kind === "none") return action;
      const resourceVersion = s.metadata?.resourceVersion ?? "";
      if (decision.kind === "delete") {
        await deps.kube.deleteSnapshot(namespace, id, { resourceVersion }).catch((e: unknown) => {
          if (!isNotFound(e)) throw e;
        });
        return action;
      }
      const { resume: _dropped, ...rest } = s.status ?? {};
      await deps.kube.replaceSnapshotStatus(namespace, {
        ...s,
        status: { ...rest, phase: SNAPSHOT_PHASE.PAUSED },
      });
      const { record: _none, ...withoutRecord } = action;
      return withoutRecord;
    } catch (e) {
      // A conflict: the snapshot changed since it was read; the next run decides again.
      if (!isConflict(e))
        deps.log.warn(
          { sandboxId: id, err: String(e) },
          "release: the resumed sandbox's snapshot was not updated",
        );
      return undefined;
    }
  });
}
