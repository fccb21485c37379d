// The pause's mark on its pod. A pause completes with two writes on two objects (the snapshot
// Paused, then the pod released), so a release for another reason (the lifetime, idleness, a
// failure) could land between them and end, with a terminal record, a sandbox whose snapshot says
// it is paused. The mark closes that: the pauser writes it on the pod (preconditioned on the pod's
// resourceVersion) before the snapshot says Paused, so a release decided on a pod read without
// it fails its own precondition, and a release that sees it leaves the pod to the pause while the
// snapshot still holds that pause (heldByPause).
import type { V1Pod } from "@kubernetes/client-node";
import { PAUSING_ANNOTATION } from "../crd/keys.ts";
import { escapePointer, type JsonPatchOp } from "../kube/json-patch.ts";

/** pauseMarkOf is the snapshot generation a pod's mark names, if it carries one. */
export function pauseMarkOf(pod: V1Pod | undefined): number | undefined {
  const raw = pod?.metadata?.annotations?.[PAUSING_ANNOTATION];
  const generation = raw === undefined ? Number.NaN : Number(raw);
  return Number.isSafeInteger(generation) && generation > 0 ? generation : undefined;
}

/**
 * pauseMarkPatch marks `pod` (as read: its resourceVersion is the precondition) with the pause of
 * snapshot generation `generation`. Throws for a pod not read from the apiserver.
 */
export function pauseMarkPatch(pod: V1Pod, generation: number): JsonPatchOp[] {
  const resourceVersion = pod.metadata?.resourceVersion;
  if (!resourceVersion) throw new Error("pauseMarkPatch: pod has no metadata.resourceVersion");
  const value = String(generation);
  const annotations = pod.metadata?.annotations;
  return [
    { op: "test", path: "/metadata/resourceVersion", value: resourceVersion },
    annotations
      ? { op: "add", path: `/metadata/annotations/${escapePointer(PAUSING_ANNOTATION)}`, value }
      : { op: "add", path: "/metadata/annotations", value: { [PAUSING_ANNOTATION]: value } },
  ];
}
