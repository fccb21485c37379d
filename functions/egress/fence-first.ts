// A create's egress rules go on before its claim: the sandbox's NetworkPolicy is written (selecting
// the new sandbox id, chosen before the claim) in every namespace the create may claim a pod in,
// so the claim write that labels the pod never lands on a pod without its policy. A write that
// fails fails the create, with nothing claimed; `undo` takes the policies away again when the
// create claims nothing (best effort: the sweep removes what it misses).
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { hasEgressRules, type SandboxNetwork } from "../../lib/egress/network.ts";
import { canNamePolicy, egressPolicyName } from "../../lib/egress/policy.ts";
import { isApiServerTrouble } from "../../lib/kube/errors.ts";
import type { HostDeps } from "../host-deps.ts";
import { removeEgressPolicy, writeEgressPolicy } from "./egress-policy.ts";

/** Fence is the written policies' undo, or why they could not be written (retry: the apiserver's trouble). */
export type Fence = { ok: true; undo: () => Promise<void> } | { ok: false; message: string; retry: boolean };

/** fenceFirst writes sandboxId's policy in each namespace of `pools` when `network` has egress rules. */
export async function fenceFirst(
  deps: Pick<HostDeps, "kube" | "log">,
  pools: readonly SandboxPool[],
  sandboxId: string,
  network: SandboxNetwork | undefined,
): Promise<Fence> {
  const none: Fence = { ok: true, undo: async () => {} };
  if (!network || !hasEgressRules(network)) return none;
  const name = egressPolicyName(sandboxId);
  if (!canNamePolicy(sandboxId))
    return { ok: false, message: `sandbox id ${sandboxId} cannot name a NetworkPolicy`, retry: false };
  const namespaces = [...new Set(pools.map((p) => p.metadata?.namespace ?? ""))].filter(Boolean);
  const written: string[] = [];
  const undo = async () => {
    for (const ns of written)
      await removeEgressPolicy(deps, ns, sandboxId).catch((e: unknown) =>
        deps.log.warn(
          { sandboxId, namespace: ns, err: String(e) },
          "create: egress policy left to the sweep",
        ),
      );
  };
  for (const ns of namespaces) {
    try {
      await writeEgressPolicy(deps, ns, sandboxId, network);
      written.push(ns);
    } catch (e) {
      await undo();
      return {
        ok: false,
        message: `the sandbox's egress rules could not be applied (NetworkPolicy ${ns}/${name}): ${e instanceof Error ? e.message : String(e)}; nothing was created`,
        retry: isApiServerTrouble(e),
      };
    }
  }
  return { ok: true, undo };
}
