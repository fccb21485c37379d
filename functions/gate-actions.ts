import type { V1Pod } from "@kubernetes/client-node";
import type { Action } from "../lib/kube/action.ts";

/**
 * gateActions keeps the actions whose pod passes `gate` (an action on no known pod passes): a gate
 * makes a write that must land before the action may (a release's policy or snapshot deletion),
 * and says whether it did; an action whose gate failed waits for the next run, its pod unchanged.
 */
export async function gateActions(
  actions: readonly Action[],
  pods: readonly V1Pod[],
  gate: (pod: V1Pod) => Promise<boolean>,
): Promise<Action[]> {
  const byName = new Map(pods.map((p) => [`${p.metadata?.namespace}/${p.metadata?.name}`, p]));
  const kept: Action[] = [];
  for (const action of actions) {
    const pod =
      action.target.kind === "Pod"
        ? byName.get(`${action.target.namespace}/${action.target.name}`)
        : undefined;
    if (!pod || (await gate(pod))) kept.push(action);
  }
  return kept;
}
