import type { V1Pod } from "@kubernetes/client-node";
import { sandboxWarningEvents, warningEventSelector } from "../../lib/claims/sandbox-events.ts";
import type { SandboxView } from "../../lib/claims/sandbox-view.ts";
import type { PodDiagnosticEvent } from "../../lib/lifecycle/diagnostics.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * withSandboxEvents gives a sandbox with a diagnosis (starting, failed) its pod's Warning events
 * since its claim (sandboxWarningEvents): one read of that pod's events, only for a sandbox that
 * needs explaining (others come back as they are), answered as the view and the events apart. Events that cannot be read leave the
 * diagnosis without them rather than failing the caller.
 */
export async function withSandboxEvents(
  deps: HostDeps,
  pod: V1Pod,
  view: SandboxView,
): Promise<{ view: SandboxView; events: PodDiagnosticEvent[] }> {
  const detail = view.detail;
  if (!detail) return { view, events: [] };
  const events = await deps.kube
    .listEvents(pod.metadata?.namespace ?? "", warningEventSelector(pod))
    .catch((e: unknown) => {
      deps.log.warn({ sandbox: view.sandboxId, err: String(e) }, "sandbox events not read");
      return undefined;
    });
  if (!events) return { view, events: [] };
  const explained = sandboxWarningEvents(detail, pod, events.items);
  return { view: { ...view, detail: explained }, events: explained.events };
}
