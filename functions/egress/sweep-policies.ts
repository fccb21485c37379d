// The tick's sweep of leftover sandbox policies (lib/egress/orphans.ts): a create whose claim
// failed after its policy write and whose own clean-up did not land, a host that crashed between
// the two writes, a release that replaced its pod. A leftover selects no pod (it names a sandbox
// no pod carries), so it is harmless; the sweep keeps the namespace tidy.
import type { V1Pod } from "@kubernetes/client-node";
import { EGRESS_CUSTOM, EGRESS_LABEL, SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import { claimKey, orphanCandidates, type PolicyFacts } from "../../lib/egress/orphans.ts";
import { POLICY_SELECTOR } from "../../lib/egress/policy.ts";
import { isConflict, isNotFound } from "../../lib/kube/errors.ts";
import type { HostDeps } from "../host-deps.ts";

/** SweepReport says how many policies were listed and which were deleted. */
export interface SweepReport {
  policies: number;
  deleted: string[];
}

/** fencedKeys are the claimKeys of the pods carrying a sandbox id and the egress label. */
export function fencedKeys(pods: readonly V1Pod[]): Set<string> {
  const keys = new Set<string>();
  for (const p of pods) {
    const id = p.metadata?.labels?.[SANDBOX_ID_LABEL];
    if (id && p.metadata?.labels?.[EGRESS_LABEL] === EGRESS_CUSTOM)
      keys.add(claimKey(p.metadata?.namespace ?? "", id));
  }
  return keys;
}

/**
 * sweepEgressPolicies lists the sandbox policies (in `namespace`, or all) and deletes those
 * older than the grace whose sandbox no pod carries with the egress label. `known` (the tick's
 * pods, maybe a moment old) spares the live ones a read; each candidate is confirmed by a quorum
 * list of the pods with its sandbox id and the egress label, and deleted only at the version
 * listed, so a policy a network update rewrote meanwhile stays.
 */
export async function sweepEgressPolicies(
  deps: Pick<HostDeps, "kube" | "now" | "log">,
  namespace: string | undefined,
  known: readonly V1Pod[] = [],
): Promise<SweepReport> {
  const policies = (await deps.kube.listNetworkPolicies<PolicyFacts>(namespace, POLICY_SELECTOR)).items;
  const deleted: string[] = [];
  for (const policy of orphanCandidates(policies, fencedKeys(known), deps.now())) {
    const ns = policy.metadata?.namespace ?? "";
    const name = policy.metadata?.name ?? "";
    const id = policy.metadata?.labels?.[SANDBOX_ID_LABEL] ?? "";
    const pods = await deps.kube.listPods(ns, `${SANDBOX_ID_LABEL}=${id},${EGRESS_LABEL}=${EGRESS_CUSTOM}`);
    if (pods.items.length > 0) continue;
    try {
      await deps.kube.deleteNetworkPolicy(ns, name, {
        resourceVersion: policy.metadata?.resourceVersion ?? "",
      });
      deleted.push(`${ns}/${name}`);
      deps.log.info(
        { namespace: ns, policy: name, sandboxId: id },
        "deleted a leftover sandbox egress policy",
      );
    } catch (e) {
      if (!isConflict(e) && !isNotFound(e)) throw e;
    }
  }
  return { policies: policies.length, deleted };
}
