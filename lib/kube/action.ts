import type { V1Pod } from "@kubernetes/client-node";
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool, SandboxPoolStatus } from "../crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import type { SandboxRecord } from "../history/record.ts";
import type { JsonPatchOp } from "./json-patch.ts";

/** ActionEvent is a Kubernetes Event to emit about the action's object once the write succeeded. */
export interface ActionEvent {
  type: "Normal" | "Warning";
  reason: string;
  action: string;
  note: string;
}

/**
 * Action is one write a reconcile step decided on, as plain data: the object, why, the history
 * record that must be stored first (idempotent by sandbox ID, so a crash between the two writes
 * repeats the record harmlessly and never loses it), the write itself with its preconditions
 * (resourceVersion/phase tests in the patch, uid/resourceVersion on delete, a deterministic name
 * on create), and an optional event.
 */
export interface Action {
  /** target: namespace is "" for a SandboxTemplate (cluster-scoped). */
  target: { kind: "Pod" | "SandboxPool" | "SandboxEnv" | "SandboxTemplate"; namespace: string; name: string };
  why: string;
  record?: SandboxRecord;
  write:
    | { op: "create"; object: V1Pod | SandboxPool | SandboxEnv }
    | { op: "patch"; patch: JsonPatchOp[] }
    /** status merge-patches a pool's status: only the fields given change. */
    | { op: "status"; status: SandboxPoolStatus }
    /** patch-status JSON-patches the status subresource (an Env's, a pool's or a template's, its tests first). */
    | { op: "patch-status"; patch: JsonPatchOp[] }
    | { op: "delete"; uid?: string; resourceVersion?: string };
  event?: ActionEvent;
  /** events are more Events after `event`, for a write that says several things at once. */
  events?: ActionEvent[];
  /**
   * observe is what the write ends, to record in the duration histograms once it succeeded
   * (seconds): a start (claim → Running), a sandbox's life (Running → stop), a recycle (Stopping → Idle).
   */
  observe?: { metric: PhaseMetric; seconds: number }[];
}

/** PhaseMetric names a phase duration an action can end (agentbox_sandbox_<metric>_duration_seconds). */
export type PhaseMetric = "starting" | "running" | "recycle";

/** podTarget names a pod as an action target. */
export function podTarget(pod: V1Pod): Action["target"] {
  return { kind: "Pod", namespace: pod.metadata?.namespace ?? "", name: pod.metadata?.name ?? "" };
}

/** poolTarget names a pool as an action target. */
export function poolTarget(pool: SandboxPool): Action["target"] {
  return { kind: "SandboxPool", namespace: pool.metadata?.namespace ?? "", name: pool.metadata?.name ?? "" };
}

/** envTarget names an Env as an action target. */
export function envTarget(env: SandboxEnv): Action["target"] {
  return { kind: "SandboxEnv", namespace: env.metadata?.namespace ?? "", name: env.metadata?.name ?? "" };
}

/** templateTarget names a (cluster-scoped) template as an action target. */
export function templateTarget(template: SandboxTemplate): Action["target"] {
  return { kind: "SandboxTemplate", namespace: "", name: template.metadata?.name ?? "" };
}

/** guardedDelete deletes exactly the pod version the plan saw (uid and resourceVersion). */
export function guardedDelete(pod: V1Pod): Action["write"] {
  return { op: "delete", uid: pod.metadata?.uid, resourceVersion: pod.metadata?.resourceVersion };
}

/** testVersion is the JSON Patch precondition that the object is still the version we read. */
export function testVersion(obj: { metadata?: { resourceVersion?: string } }): JsonPatchOp {
  return { op: "test", path: "/metadata/resourceVersion", value: obj.metadata?.resourceVersion ?? "" };
}

/**
 * testSpec is the JSON Patch precondition that the object's spec is still the one we read: the
 * same object (uid) at the same metadata.generation, which moves with spec changes only. A patch
 * of spec fields decided from that spec then does not lose to the status and annotation writes
 * that change a busy pool's resourceVersion many times a second.
 */
export function testSpec(obj: { metadata?: { uid?: string; generation?: number } }): JsonPatchOp[] {
  return [
    { op: "test", path: "/metadata/uid", value: obj.metadata?.uid ?? "" },
    { op: "test", path: "/metadata/generation", value: obj.metadata?.generation ?? 0 },
  ];
}

/** isTerminating: deletion was requested for the object. */
export function isTerminating(obj: { metadata?: { deletionTimestamp?: unknown } }): boolean {
  return obj.metadata?.deletionTimestamp !== undefined && obj.metadata?.deletionTimestamp !== null;
}

/** observations is an action's observe field: each duration in ms that is known, in seconds. */
export function observations(...durations: [PhaseMetric, number | undefined][]): Pick<Action, "observe"> {
  const observe = durations.flatMap(([metric, ms]) =>
    ms === undefined || !Number.isFinite(ms) ? [] : [{ metric, seconds: ms / 1000 }],
  );
  return observe.length > 0 ? { observe } : {};
}

/** between is the ms from one RFC 3339 time to another, when both parse. */
export function between(from: string | undefined, to: string | undefined): number | undefined {
  const ms = Date.parse(to ?? "") - Date.parse(from ?? "");
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}
