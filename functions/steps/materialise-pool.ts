import { SANDBOX_POOL_LABEL } from "../../lib/crd/keys.ts";
import { partitionPods } from "../../lib/membership/pod-ownership.ts";
import { creationBlock } from "../../lib/pool/creation-block.ts";
import { scaleDownPolicyFor } from "../../lib/pool/scale-plan.ts";
import { deletesForRollout, planMaterialise } from "../../lib/reconcile/materialise.ts";
import type { Step } from "./step.ts";

/**
 * materialisePool keeps spec.replicas pods and handles pool deletion (see planMaterialise); a
 * pool that cannot render pods yet (creationBlock) creates none. A plan that deletes outdated pods
 * for a rollout is made again on a fresh list of the pool's pods: how many claimable idle pods
 * stay depends on every pod, and the run's snapshot may be a tick's, up to a period's spread old
 * (ADR 0031). One more list per such run, during rollouts only.
 */
export const materialisePool: Step = {
  name: "materialise-pool",
  plan: async (deps, { pool, pods, foreign, env, template }) => {
    const policy = scaleDownPolicyFor(pool, env);
    const block = creationBlock(pool, template);
    const actions = planMaterialise(pool, pods, policy, deps.now(), block, foreign);
    if (!deletesForRollout(actions)) return actions;
    const listed = await deps.kube.listPods(
      pool.metadata?.namespace ?? "",
      `${SANDBOX_POOL_LABEL}=${pool.metadata?.name ?? ""}`,
    );
    const fresh = partitionPods(pool, listed.items);
    return planMaterialise(pool, fresh.owned, policy, deps.now(), block, fresh.foreign);
  },
};
