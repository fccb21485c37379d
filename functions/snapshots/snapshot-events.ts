import type { SandboxSnapshot } from "../../lib/crd/sandbox-snapshot.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * snapshotEvent records what happened to a paused sandbox as an Event on its SandboxSnapshot
 * (`kubectl describe sbs <id>`): Paused, Resumed, PauseFailed, Expired. The sandbox's terminal
 * history record is written once, at its end; these are its pauses and resumes in between. Best
 * effort: an Event that cannot be written is logged, never a failure of the pause or resume.
 */
export async function snapshotEvent(
  deps: Pick<HostDeps, "kube" | "log" | "now" | "reporter">,
  s: SandboxSnapshot,
  type: "Normal" | "Warning",
  reason: "Paused" | "Resumed" | "PauseFailed" | "Expired",
  note: string,
): Promise<void> {
  await deps.kube
    .createEvent(
      {
        type,
        reason,
        note,
        action: reason === "Resumed" ? "Resume" : reason === "Expired" ? "Delete" : "Pause",
        regarding: {
          apiVersion: "agents.navix.sh/v1alpha1",
          kind: "SandboxSnapshot",
          namespace: s.metadata?.namespace ?? "",
          name: s.metadata?.name ?? "",
          ...(s.metadata?.uid ? { uid: s.metadata.uid } : {}),
        },
      },
      deps.now(),
      deps.reporter.controller,
      deps.reporter.instance,
    )
    .catch((e: unknown) =>
      deps.log.debug({ sandboxId: s.spec.sandboxId, err: String(e) }, "snapshot event not written"),
    );
}
