import type { Tenant } from "../../lib/sandboxes/api-keys.ts";
import { type SandboxView, sandboxView } from "../../lib/sandboxes/view.ts";
import type { ApiDeps } from "./deps.ts";
import { findSandbox } from "./find-sandbox.ts";
import { withSandboxEvents } from "./sandbox-events.ts";

/**
 * getSandbox reads one sandbox of the tenant. A sandbox with a diagnosis (starting, failed) also
 * gets its pod's Warning events in it, newest first (upstream's BuildPodStatusDetailWithEvents):
 * one more read, only for the sandboxes that need explaining, and only events since its claim
 * (the pod served earlier sandboxes under the same name and uid; see withSandboxEvents).
 */
export async function getSandbox(
  deps: ApiDeps,
  tenant: Tenant,
  id: string,
): Promise<SandboxView | undefined> {
  const pod = await findSandbox(deps, tenant, id);
  const view = pod && sandboxView(pod, deps.now());
  return pod && view ? (await withSandboxEvents(deps, pod, view)).view : view;
}
