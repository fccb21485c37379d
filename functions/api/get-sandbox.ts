import type { Tenant } from "../../lib/sandboxes/api-keys.ts";
import { envdAccessToken } from "../../lib/sandboxes/sealing.ts";
import {
  isOwnSandbox,
  type SandboxAccess,
  type SandboxView,
  sandboxView,
  withAccess,
} from "../../lib/sandboxes/view.ts";
import type { ApiDeps } from "./deps.ts";
import { findSandbox } from "./find-sandbox.ts";
import { withSandboxEvents } from "./sandbox-events.ts";

/**
 * getSandbox reads one sandbox of the tenant. A sandbox with a diagnosis (starting, failed) also
 * gets its pod's Warning events in it, newest first (upstream's BuildPodStatusDetailWithEvents):
 * one more read, only for the sandboxes that need explaining, and only events since its claim
 * (the pod served earlier sandboxes under the same name and uid; see withSandboxEvents). It also
 * says how the sandbox is reached (withAccess): its URLs under `domain`, and to its owner only
 * (not to an admin looking at another tenant's), envd's access token, recomputed from the sealing
 * key as the E2B answers do (none without a key).
 */
export async function getSandbox(
  deps: ApiDeps,
  tenant: Tenant,
  id: string,
  domain?: string,
): Promise<(SandboxView & { access?: SandboxAccess }) | undefined> {
  const pod = await findSandbox(deps, tenant, id);
  const found = pod && sandboxView(pod, deps.now());
  if (!pod || !found) return undefined;
  const view = (await withSandboxEvents(deps, pod, found)).view;
  const keys = deps.postStart?.keys;
  const token = keys && isOwnSandbox(view, tenant) ? await envdAccessToken(keys, view.sandboxId) : undefined;
  return withAccess(view, domain, token);
}
