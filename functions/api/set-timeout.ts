import { IDLE_TIMEOUT_ANNOTATION, SANDBOX_ID_LABEL } from "../../lib/api/keys.ts";
import { isConflict } from "../../lib/kube/errors.ts";
import { escapePointer } from "../../lib/kube/json-patch.ts";
import type { Tenant } from "../../lib/sandboxes/api-keys.ts";
import { type SandboxView, sandboxView } from "../../lib/sandboxes/view.ts";
import type { ApiDeps } from "./deps.ts";
import { findSandbox } from "./find-sandbox.ts";

/**
 * setSandboxTimeout sets a sandbox's idle timeout (seconds; 0 removes it) with a patch that tests
 * the pod's resourceVersion and sandbox id, re-reading on a lost race.
 */
export async function setSandboxTimeout(
  deps: ApiDeps,
  tenant: Tenant,
  id: string,
  seconds: number,
): Promise<SandboxView | undefined> {
  const path = `/metadata/annotations/${escapePointer(IDLE_TIMEOUT_ANNOTATION)}`;
  for (let attempt = 0; attempt < 5; attempt++) {
    const pod = await findSandbox(deps, tenant, id);
    if (!pod) return undefined;
    const has = pod.metadata?.annotations?.[IDLE_TIMEOUT_ANNOTATION] !== undefined;
    const change =
      seconds > 0
        ? [{ op: "add" as const, path, value: String(seconds) }]
        : has
          ? [{ op: "remove" as const, path }]
          : [];
    try {
      const patched = await deps.kube.patchPod(pod.metadata?.namespace ?? "", pod.metadata?.name ?? "", [
        { op: "test", path: "/metadata/resourceVersion", value: pod.metadata?.resourceVersion ?? "" },
        { op: "test", path: `/metadata/labels/${escapePointer(SANDBOX_ID_LABEL)}`, value: id },
        ...change,
      ]);
      return sandboxView(patched, deps.now());
    } catch (e) {
      if (!isConflict(e)) throw e;
    }
  }
  throw new Error(`sandbox ${id} kept changing; try again`);
}
