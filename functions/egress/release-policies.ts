// The release's half of a sandbox's egress rules: before a stopping pod goes back to idle (or is
// deleted to be replaced), its sandbox's policy is deleted and proven gone; only then does the
// return to idle take the egress label off, so no moment exists where a pod that served the
// sandbox runs without both its policy and its label, and the next sandbox starts on the
// namespace's default. The policy selects the old sandbox's id, so even a leftover never fences
// the next tenant; the order keeps the namespace free of leftovers.
import type { V1Pod } from "@kubernetes/client-node";
import { EGRESS_CUSTOM, EGRESS_LABEL, SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import type { Action } from "../../lib/kube/action.ts";
import { gateActions } from "../gate-actions.ts";
import type { HostDeps } from "../host-deps.ts";
import { removeEgressPolicy } from "./egress-policy.ts";

/**
 * releasePolicies removes the policy of every pod `actions` write to that carries the egress label,
 * and keeps only the actions whose pod has none left (a removal that failed or could not be proven
 * leaves its pod stopping: the next run tries again). Pods without the label cost no request.
 */
export function releasePolicies(
  deps: Pick<HostDeps, "kube" | "log">,
  actions: readonly Action[],
  pods: readonly V1Pod[],
): Promise<Action[]> {
  return gateActions(actions, pods, async (pod, action) => {
    const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL];
    if (!id || pod.metadata?.labels?.[EGRESS_LABEL] !== EGRESS_CUSTOM) return action;
    const gone = await removeEgressPolicy(deps, pod.metadata?.namespace ?? "", id).catch((e: unknown) => {
      deps.log.warn(
        { sandboxId: id, err: String(e) },
        "release: the sandbox's egress policy could not be removed",
      );
      return false;
    });
    return gone ? action : undefined;
  });
}
