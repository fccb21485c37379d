// A create that waits for its sandbox's start says so on the pod (waiter-until, ADR 0022), and the
// reconcile runs leave that start to it until then. A create that stops waiting before that time
// (its host shuts down, ADR 0029) takes the mark off, so any host's next run completes the start.
import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_ID_LABEL, WAITER_UNTIL_ANNOTATION } from "../crd/keys.ts";
import { escapePointer, type JsonPatchOp } from "../kube/json-patch.ts";

/**
 * handBackStartPatch is the patch that hands a waited start back to the reconcile runs: it removes
 * the pod's waiter-until, on condition that the pod still runs the same sandbox and carries the
 * same waiter-until as read (both written once, by the claim: a kubelet status write in between
 * does not fail it, a new claim of the pod does). Undefined when the pod carries none (nothing to
 * hand back). A second try fails its test and changes nothing.
 */
export function handBackStartPatch(pod: V1Pod): JsonPatchOp[] | undefined {
  const until = pod.metadata?.annotations?.[WAITER_UNTIL_ANNOTATION];
  const sandboxId = pod.metadata?.labels?.[SANDBOX_ID_LABEL];
  if (until === undefined || sandboxId === undefined) return undefined;
  const annotation = `/metadata/annotations/${escapePointer(WAITER_UNTIL_ANNOTATION)}`;
  return [
    { op: "test", path: `/metadata/labels/${escapePointer(SANDBOX_ID_LABEL)}`, value: sandboxId },
    { op: "test", path: annotation, value: until },
    { op: "remove", path: annotation },
  ];
}
