import type { Tenant } from "../../lib/claims/api-keys.ts";
import { type SandboxDetail, sandboxView } from "../../lib/claims/sandbox-view.ts";
import type { HostDeps } from "../host-deps.ts";
import { findSandbox } from "./find-sandbox.ts";
import { viewWithAccess } from "./sandbox-access.ts";
import { withSandboxEvents } from "./sandbox-events.ts";

/**
 * getSandbox reads one sandbox of the tenant. A sandbox with a diagnosis (starting, failed) also
 * gets its pod's Warning events in it, newest first (upstream's BuildPodStatusDetailWithEvents):
 * one more read, only for the sandboxes that need explaining, and only events since its claim
 * (the pod served earlier sandboxes under the same name and uid; see withSandboxEvents). It also
 * shows its network settings and says how it is reached (viewWithAccess): its URLs under
 * `domain`, and to its owner only (not to an admin looking at another tenant's), envd's access
 * token and a private sandbox's traffic token, recomputed from the sealing key as the E2B answers
 * do (none without a key).
 */
export async function getSandbox(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
  domain?: string,
): Promise<SandboxDetail | undefined> {
  const pod = await findSandbox(deps, tenant, id);
  const found = pod && sandboxView(pod, deps.now());
  if (!pod || !found) return undefined;
  const view = (await withSandboxEvents(deps, pod, found)).view;
  return viewWithAccess(deps, tenant, pod, view, domain);
}
