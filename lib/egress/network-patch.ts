// The pod write of a network update: the egress label and the settings annotation as the new
// settings say, preconditioned on the pod's version and sandbox id, so it lands only on the pod
// (and the sandbox) the update read.
import type { V1Pod } from "@kubernetes/client-node";
import { EGRESS_LABEL, NETWORK_ANNOTATION, SANDBOX_ID_LABEL } from "../crd/keys.ts";
import { escapePointer, type JsonPatchOp, mapOps } from "../kube/json-patch.ts";
import { networkMarks, type SandboxNetwork } from "./network.ts";

/**
 * networkPatch moves pod's egress label and network annotation to what `next` says (networkMarks;
 * the private-traffic annotation is a create's and stays), tested on the pod's resourceVersion
 * and its sandbox id label. Empty when nothing changes.
 */
export function networkPatch(pod: V1Pod, sandboxId: string, next: SandboxNetwork): JsonPatchOp[] {
  const marks = networkMarks(next);
  const ops = [
    ...mapOps("/metadata/labels", pod.metadata?.labels, marks.labels, [EGRESS_LABEL]),
    ...mapOps(
      "/metadata/annotations",
      pod.metadata?.annotations,
      NETWORK_ANNOTATION in marks.annotations
        ? { [NETWORK_ANNOTATION]: marks.annotations[NETWORK_ANNOTATION] ?? "" }
        : {},
      [NETWORK_ANNOTATION],
    ),
  ];
  if (ops.length === 0) return [];
  return [
    { op: "test", path: "/metadata/resourceVersion", value: pod.metadata?.resourceVersion ?? "" },
    { op: "test", path: `/metadata/labels/${escapePointer(SANDBOX_ID_LABEL)}`, value: sandboxId },
    ...ops,
  ];
}
