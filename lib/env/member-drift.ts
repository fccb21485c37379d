// How a live member pool differs from what its Env renders, as one JSON Patch. Only what the Env
// owns is compared: the owned spec fields, and the labels and annotations it stamps (keys it
// stamped before and no longer renders are removed; anyone else's keys are left alone).
import {
  MANAGED_ANNOTATION_KEYS_ANNOTATION,
  MANAGED_LABEL_KEYS_ANNOTATION,
  SCALING_GROUP_LABEL,
} from "../crd/keys.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { fieldOps, type JsonPatchOp, mapOps } from "../kube/json-patch.ts";
import { managedKeys } from "../lifecycle/lifecycle-keys.ts";
import { jsonEqual } from "../util/deep-equal.ts";
import type { RenderedMember } from "./render-member.ts";

/** MemberDrift is the patch that brings a member pool back to its render, and what it changes. */
export interface MemberDrift {
  /** ops, without a precondition (callers test the resourceVersion first); empty: no drift. */
  ops: JsonPatchOp[];
  /** changed names what differs: spec fields, "labels", "annotations". */
  changed: string[];
  /** replicas is set when spec.replicas differs: the live value and the Env's. */
  replicas?: { live: number; wanted: number };
}

/** dropped are the keys the pool's managed-keys annotation lists that the render no longer has. */
function dropped(live: SandboxPool, annotation: string, rendered: Record<string, string>): string[] {
  return managedKeys(live, annotation).filter((k) => !(k in rendered));
}

/**
 * memberDrift compares a live member pool with its render. Label and annotation keys the Env
 * stamped before (its managed-keys annotations) but renders no more are removed only when the
 * render is complete: an incomplete one does not know the template's keys.
 */
export function memberDrift(live: SandboxPool, rendered: RenderedMember): MemberDrift {
  const spec = fieldOps(
    "/spec",
    live.spec as Record<string, unknown>,
    rendered.spec,
    rendered.owned,
    jsonEqual,
  );
  // The scaling-group label goes with the member's group (a reserved key, never in managed keys).
  const identity = SCALING_GROUP_LABEL in rendered.labels ? [] : [SCALING_GROUP_LABEL];
  const labels = mapOps("/metadata/labels", live.metadata?.labels, rendered.labels, [
    ...identity,
    ...(rendered.complete ? dropped(live, MANAGED_LABEL_KEYS_ANNOTATION, rendered.labels) : []),
  ]);
  const annotations = mapOps(
    "/metadata/annotations",
    live.metadata?.annotations,
    rendered.annotations,
    rendered.complete ? dropped(live, MANAGED_ANNOTATION_KEYS_ANNOTATION, rendered.annotations) : [],
  );
  const changed = [
    ...spec.map((op) => `spec.${op.path.slice("/spec/".length)}`),
    ...(labels.length ? ["labels"] : []),
    ...(annotations.length ? ["annotations"] : []),
  ];
  const wanted = rendered.spec.replicas;
  return {
    ops: [...spec, ...labels, ...annotations],
    changed,
    ...(live.spec.replicas !== wanted ? { replicas: { live: live.spec.replicas, wanted } } : {}),
  };
}
