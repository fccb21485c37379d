import type { V1Pod } from "@kubernetes/client-node";
import type { Action } from "../lib/kube/action.ts";

/**
 * gateActions keeps the actions whose pod passes `gate` (an action on no known pod passes): a gate
 * makes a write that must land before the action may (a release's policy or snapshot deletion),
 * and answers the action to keep (itself, or changed), or undefined when its write failed: that
 * action waits for the next run, its pod unchanged.
 */
export async function gateActions(
  actions: readonly Action[],
  pods: readonly V1Pod[],
  gate: (pod: V1Pod, action: Action) => Promise<Action | undefined>,
): Promise<Action[]> {
  const byName = new Map(pods.map((p) => [`${p.metadata?.namespace}/${p.metadata?.name}`, p]));
  const kept: Action[] = [];
  for (const action of actions) {
    const pod =
      action.target.kind === "Pod"
        ? byName.get(`${action.target.namespace}/${action.target.name}`)
        : undefined;
    const passed = pod ? await gate(pod, action) : action;
    if (passed) kept.push(passed);
  }
  return kept;
}
