// A transition is written as one RFC 6902 JSON Patch whose first operations are preconditions:
// the pod's resourceVersion (nothing changed since we read it) and the phase label (this
// transition has not happened yet). The apiserver applies the whole patch or none of it, so a
// step that runs twice, late, or concurrently with another replica fails instead of acting twice.
import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_PHASE_LABEL } from "../crd/keys.ts";
import { escapePointer, type JsonPatchOp, mapOps } from "../kube/json-patch.ts";
import type { PodIntent } from "./pod-intent.ts";

/** JsonPatchOperation is the RFC 6902 operation a pod intent renders to. */
export type JsonPatchOperation = JsonPatchOp;

/**
 * toJsonPatch renders an intent against the pod it was built from. Operation 1 tests
 * /metadata/resourceVersion, operation 2 tests the phase label against intent.expectPhase; then
 * label and annotation removals (only keys the pod has), additions and replacements (unchanged
 * values are skipped), with `/` and `~` in keys escaped per RFC 6901, and image replacements by
 * container index. Throws when the pod has no resourceVersion (it was not read from the
 * apiserver) or the intent names a container the pod does not have: both are programming errors.
 */
export function toJsonPatch(pod: V1Pod, intent: PodIntent): JsonPatchOperation[] {
  const resourceVersion = pod.metadata?.resourceVersion;
  if (!resourceVersion) throw new Error("toJsonPatch: pod has no metadata.resourceVersion");
  const containers = pod.spec?.containers ?? [];
  const imageOps = Object.entries(intent.containerImages).flatMap(([name, image]): JsonPatchOperation[] => {
    const index = containers.findIndex((c) => c.name === name);
    if (index === -1) throw new Error(`toJsonPatch: container ${JSON.stringify(name)} not found in pod`);
    return containers[index]?.image === image
      ? []
      : [{ op: "replace", path: `/spec/containers/${index}/image`, value: image }];
  });
  return [
    { op: "test", path: "/metadata/resourceVersion", value: resourceVersion },
    { op: "test", path: `/metadata/labels/${escapePointer(SANDBOX_PHASE_LABEL)}`, value: intent.expectPhase },
    ...mapOps("/metadata/labels", pod.metadata?.labels, intent.setLabels, intent.removeLabels),
    ...mapOps(
      "/metadata/annotations",
      pod.metadata?.annotations,
      intent.setAnnotations,
      intent.removeAnnotations,
    ),
    ...imageOps,
  ];
}
