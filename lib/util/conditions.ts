// metav1.Condition bookkeeping shared by every status this control plane computes (pools, Envs):
// a computed condition replaces its stored twin, keeping lastTransitionTime while the status holds.
import type { Condition } from "../crd/common.ts";
import { rfc3339 } from "./time.ts";

/** ConditionCore is a condition as a decision computes it, before the bookkeeping. */
export type ConditionCore = Pick<Condition, "type" | "status" | "reason" | "message">;

/**
 * setConditions sets each computed condition into the previous list like
 * apimeta.SetStatusCondition: lastTransitionTime is kept when the status did not change and
 * becomes `now` when it did; conditions of other types stay, in their order, except the types
 * listed in `remove` (apimeta.RemoveStatusCondition).
 */
export function setConditions(
  previous: readonly Condition[],
  computed: readonly ConditionCore[],
  now: Date,
  generation: number | undefined,
  remove: readonly string[] = [],
): Condition[] {
  const full = (core: ConditionCore): Condition => {
    const prev = previous.find((p) => p.type === core.type);
    const lastTransitionTime = prev && prev.status === core.status ? prev.lastTransitionTime : rfc3339(now);
    return {
      ...core,
      lastTransitionTime,
      ...(generation === undefined ? {} : { observedGeneration: generation }),
    };
  };
  const out = previous
    .filter((p) => !remove.includes(p.type))
    .map((p) => {
      const core = computed.find((c) => c.type === p.type);
      return core ? full(core) : p;
    });
  for (const core of computed) if (!previous.some((p) => p.type === core.type)) out.push(full(core));
  return out;
}
