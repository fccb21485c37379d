import type { SandboxSnapshot } from "../../lib/crd/sandbox-snapshot.ts";
import type { HostDeps } from "../host-deps.ts";

/** ACTIONS are the Events' actions by reason. */
const ACTIONS = {
  Paused: "Pause",
  Resumed: "Resume",
  PauseFailed: "Pause",
  Expired: "Delete",
  HandedOver: "HandOver",
} as const;

/**
 * snapshotEvent records what happened to a paused sandbox as an Event on its SandboxSnapshot
 * (`kubectl describe sbs <id>`): Paused, Resumed, PauseFailed, Expired, and HandedOver (its node
 * gone, another node's agent deletes its images: hand-over-snapshot.ts). The sandbox's terminal
 * history record is written once, at its end; these are its pauses and resumes in between. Best
 * effort: an Event that cannot be written is logged, never a failure of the pause or resume.
 */
export async function snapshotEvent(
  deps: Pick<HostDeps, "kube" | "log" | "now" | "reporter">,
  s: SandboxSnapshot,
  type: "Normal" | "Warning",
  reason: keyof typeof ACTIONS,
  note: string,
): Promise<void> {
  await deps.kube
    .createEvent(
      {
        type,
        reason,
        note,
        action: ACTIONS[reason],
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
