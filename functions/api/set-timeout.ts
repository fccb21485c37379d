import { isConflict } from "../../lib/kube/errors.ts";
import type { Tenant } from "../../lib/sandboxes/api-keys.ts";
import { type TimeoutChange, timeoutPatch } from "../../lib/sandboxes/timeouts.ts";
import { type SandboxView, sandboxView } from "../../lib/sandboxes/view.ts";
import type { ApiDeps } from "./deps.ts";
import { findSandbox } from "./find-sandbox.ts";

/**
 * setSandboxTimeouts moves a sandbox's idle timeout and/or lifetime (see timeoutPatch) with a
 * patch that tests the pod's resourceVersion and sandbox id, re-reading on a lost race. It answers
 * the sandbox as it stands after the change, or undefined when the tenant has no such sandbox.
 */
export async function setSandboxTimeouts(
  deps: ApiDeps,
  tenant: Tenant,
  id: string,
  change: TimeoutChange,
): Promise<SandboxView | undefined> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const pod = await findSandbox(deps, tenant, id);
    if (!pod) return undefined;
    const patch = timeoutPatch(pod, id, change, deps.now());
    if (patch.length === 0) return sandboxView(pod, deps.now());
    try {
      const patched = await deps.kube.patchPod(
        pod.metadata?.namespace ?? "",
        pod.metadata?.name ?? "",
        patch,
      );
      return sandboxView(patched, deps.now());
    } catch (e) {
      if (!isConflict(e)) throw e;
    }
  }
  throw new Error(`sandbox ${id} kept changing; try again`);
}
