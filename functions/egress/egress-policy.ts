// Writing and removing a sandbox's own NetworkPolicy (lib/egress/policy.ts): create or replace under
// its deterministic name, delete and prove it gone. Every call may run twice, concurrently with
// another host's, or after a crash between writes, and still leave the one policy the settings
// say (or none).

import type { SandboxNetwork } from "../../lib/egress/network.ts";
import { type EgressPolicy, egressPolicy, egressPolicyName } from "../../lib/egress/policy.ts";
import { isAlreadyExists, isConflict, isNotFound } from "../../lib/kube/errors.ts";
import { jsonEqual } from "../../lib/util/deep-equal.ts";
import type { HostDeps } from "../host-deps.ts";

type Deps = Pick<HostDeps, "kube">;

/**
 * writeEgressPolicy makes sandbox `sandboxId`'s policy in `namespace` say `network`: a create,
 * or, when one exists, a replace preconditioned on the version read (a lost race reads again).
 * `fresh` (the pod does not carry the egress label yet) replaces an existing policy by a delete
 * and a create instead, so its creation time is new and the orphan sweep's grace covers the
 * moment until the label lands. Throws what the apiserver said when it cannot.
 */
export async function writeEgressPolicy(
  deps: Deps,
  namespace: string,
  sandboxId: string,
  network: SandboxNetwork,
  fresh = true,
): Promise<EgressPolicy> {
  const wanted = egressPolicy(namespace, sandboxId, network);
  const name = wanted.metadata.name;
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      return await deps.kube.createNetworkPolicy(namespace, wanted);
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
    // 409: it exists (a retry of ours, an earlier setting). Replace it, or renew it.
    const current = await deps.kube.getNetworkPolicy<EgressPolicy>(namespace, name).catch((e: unknown) => {
      if (isNotFound(e)) return undefined;
      throw e;
    });
    if (!current) continue;
    // Already what the settings say (a retry, a check after a pod write): nothing to write.
    if (!fresh && jsonEqual(current.spec, wanted.spec)) return current;
    const version = current.metadata.resourceVersion ?? "";
    try {
      if (fresh) {
        await deps.kube.deleteNetworkPolicy(namespace, name, { resourceVersion: version });
        continue;
      }
      return await deps.kube.replaceNetworkPolicy(namespace, {
        ...wanted,
        metadata: { ...wanted.metadata, resourceVersion: version },
      });
    } catch (e) {
      if (!isConflict(e) && !isNotFound(e)) throw e;
    }
  }
  throw new Error(`networkpolicy ${namespace}/${name} kept changing while it was written; try again`);
}

/**
 * removeEgressPolicy deletes sandbox `sandboxId`'s policy in `namespace` (gone already is fine)
 * and proves it gone with a quorum read that answers 404: true then, false when it is still there
 * (a delete that has not taken effect). Only then may the pod go back to idle, so the next
 * sandbox on it never runs under this one's rules (it could not anyway: the policy selects this
 * sandbox's id, which the next one's differs from).
 */
export async function removeEgressPolicy(deps: Deps, namespace: string, sandboxId: string): Promise<boolean> {
  const name = egressPolicyName(sandboxId);
  await deps.kube.deleteNetworkPolicy(namespace, name).catch((e: unknown) => {
    if (!isNotFound(e)) throw e;
  });
  try {
    await deps.kube.getNetworkPolicy(namespace, name);
    return false;
  } catch (e) {
    if (isNotFound(e)) return true;
    throw e;
  }
}
