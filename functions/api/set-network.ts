import type { Tenant } from "../../lib/claims/api-keys.ts";
import { type SandboxView, sandboxView } from "../../lib/claims/sandbox-view.ts";
import { EGRESS_CUSTOM, EGRESS_LABEL, SANDBOX_PHASE } from "../../lib/crd/keys.ts";
import { hasEgressRules, networkOf, type SandboxNetwork, updatedNetwork } from "../../lib/egress/network.ts";
import { networkPatch } from "../../lib/egress/network-patch.ts";
import { canNamePolicy } from "../../lib/egress/policy.ts";
import { isConflict } from "../../lib/kube/errors.ts";
import { removeEgressPolicy, writeEgressPolicy } from "../egress/egress-policy.ts";
import type { HostDeps } from "../host-deps.ts";
import { lookupSandbox } from "./find-sandbox.ts";

/** SetNetworkOutcome is the sandbox's settings after the update, or that the tenant has no such sandbox. */
export type SetNetworkOutcome =
  | { ok: true; network: SandboxNetwork }
  | { ok: false; reason: "not-found" }
  | { ok: false; reason: "invalid"; message: string };

/** isLive: network rules change only on a starting or running sandbox. */
const isLive = (view: SandboxView) =>
  view.phase === SANDBOX_PHASE.STARTING || view.phase === SANDBOX_PHASE.RUNNING;

/**
 * setSandboxNetwork replaces a sandbox's egress rules (E2B's `PUT /sandboxes/{id}/network`: an
 * omitted field is cleared; allowPublicTraffic stays as created). With rules, its policy is
 * written (or replaced) first, then the pod gets the egress label and the settings in one patch
 * tested on its version and sandbox id: the label never selects a pod before its policy says what
 * it may reach. Without rules, the label comes off first (the namespace's default applies at
 * once) and the policy is deleted after; one whose delete fails selects no pod and is swept. A
 * lost race reads the pod again (from etcd). Another tenant's sandbox, or one stopping, is
 * not found, as in every other call.
 */
export async function setSandboxNetwork(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
  update: SandboxNetwork,
): Promise<SetNetworkOutcome> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const { pod } = await lookupSandbox(deps, tenant, id, attempt > 0);
    const view = pod && sandboxView(pod, deps.now());
    if (!pod || !view || !isLive(view)) return { ok: false, reason: "not-found" };
    const namespace = pod.metadata?.namespace ?? "";
    const next = updatedNetwork(networkOf(pod), update);
    const labelled = pod.metadata?.labels?.[EGRESS_LABEL] === EGRESS_CUSTOM;
    if (hasEgressRules(next) && !canNamePolicy(id))
      return {
        ok: false,
        reason: "invalid",
        message: `sandbox ${id}'s id cannot name a NetworkPolicy: it cannot have egress rules`,
      };
    if (hasEgressRules(next)) await writeEgressPolicy(deps, namespace, id, next, !labelled);
    const patch = networkPatch(pod, id, next);
    if (patch.length > 0) {
      try {
        await deps.kube.patchPod(namespace, pod.metadata?.name ?? "", patch);
      } catch (e) {
        if (isConflict(e)) continue;
        throw e;
      }
    }
    // Two updates racing may have written their policies in the other order than their pod
    // writes: the one whose pod write landed makes the policy say its settings (a no-op when it does).
    if (hasEgressRules(next) && patch.length > 0) await writeEgressPolicy(deps, namespace, id, next, false);
    if (!hasEgressRules(next))
      await removeEgressPolicy(deps, namespace, id).catch((e: unknown) =>
        deps.log.warn(
          { sandboxId: id, err: String(e) },
          "network update: the cleared egress policy is left to the sweep",
        ),
      );
    return { ok: true, network: next };
  }
  throw new Error(`sandbox ${id} kept changing; try again`);
}
