import type { V1Pod } from "@kubernetes/client-node";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { type SandboxView, sandboxView } from "../../lib/claims/sandbox-view.ts";
import { type TimeoutChange, timeoutPatch } from "../../lib/claims/timeouts.ts";
import { isConflict } from "../../lib/kube/errors.ts";
import type { HostDeps } from "../host-deps.ts";
import { lookupSandbox } from "./find-sandbox.ts";

/**
 * setSandboxTimeouts moves a sandbox's idle timeout and/or lifetime (see timeoutPatch) with a
 * patch that tests the pod's resourceVersion and sandbox id, re-reading on a lost race. The first
 * read may be the watch cache's (lookupSandbox): a pod read a moment old fails the patch's test
 * and is read again from etcd; "nothing to change" is only believed from etcd, since a write of
 * the caller's own an instant earlier may not be in the cache yet. It answers
 * the sandbox (pod and view) as it stands after the change, or undefined when the tenant has no
 * such sandbox, or none that `accept`s (then nothing is written: E2B does not retime a sandbox
 * that is already stopping).
 */
export async function setSandboxTimeouts(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
  change: TimeoutChange,
  accept: (view: SandboxView) => boolean = () => true,
): Promise<{ pod: V1Pod; view: SandboxView } | undefined> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const { pod, cached } = await lookupSandbox(deps, tenant, id, attempt > 0);
    const view = pod && sandboxView(pod, deps.now());
    if (!pod || !view || !accept(view)) return undefined;
    const patch = timeoutPatch(pod, id, change, deps.now());
    if (patch.length === 0) {
      if (cached) continue;
      return { pod, view };
    }
    try {
      const patched = await deps.kube.patchPod(
        pod.metadata?.namespace ?? "",
        pod.metadata?.name ?? "",
        patch,
      );
      const after = sandboxView(patched, deps.now());
      return after ? { pod: patched, view: after } : undefined;
    } catch (e) {
      if (!isConflict(e)) throw e;
    }
  }
  throw new Error(`sandbox ${id} kept changing; try again`);
}
