import { CLAIMED_AT_ANNOTATION } from "../../lib/api/keys.ts";
import { withWarningEvents } from "../../lib/sandbox/diagnostics.ts";
import type { Tenant } from "../../lib/sandboxes/api-keys.ts";
import { type SandboxView, sandboxView } from "../../lib/sandboxes/view.ts";
import { parseTime } from "../../lib/util/time.ts";
import type { ApiDeps } from "./deps.ts";
import { findSandbox } from "./find-sandbox.ts";

/**
 * getSandbox reads one sandbox of the tenant. A sandbox with a diagnosis (starting, failed) also
 * gets its pod's Warning events in it, newest first (upstream's BuildPodStatusDetailWithEvents):
 * one more read, only for the sandboxes that need explaining, and only events since its claim
 * (the pod served earlier sandboxes under the same name and uid). Events that cannot be read leave the
 * diagnosis without them rather than failing the call.
 */
export async function getSandbox(
  deps: ApiDeps,
  tenant: Tenant,
  id: string,
): Promise<SandboxView | undefined> {
  const pod = await findSandbox(deps, tenant, id);
  const view = pod && sandboxView(pod, deps.now());
  if (!pod || !view?.detail) return view;
  const { namespace = "", name = "" } = pod.metadata ?? {};
  const events = await deps.kube
    .listEvents(namespace, `involvedObject.name=${name},type=Warning`)
    .catch((e: unknown) => {
      deps.log.warn({ sandbox: id, err: String(e) }, "sandbox events not read");
      return undefined;
    });
  const claimedAt = parseTime(pod.metadata?.annotations?.[CLAIMED_AT_ANNOTATION]);
  return events ? { ...view, detail: withWarningEvents(view.detail, pod, events.items, claimedAt) } : view;
}
