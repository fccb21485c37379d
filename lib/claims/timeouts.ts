// Changing a running sandbox's clocks: its idle timeout (seconds without activity) and its
// lifetime (end-at, E2B's `timeout`). The change is a JSON Patch that also tests the pod's version
// and sandbox id, so it lands on the sandbox the caller read or not at all.
import type { V1Pod } from "@kubernetes/client-node";
import {
  END_AT_ANNOTATION,
  IDLE_TIMEOUT_ANNOTATION,
  LIFETIME_ANNOTATION,
  SANDBOX_ID_LABEL,
} from "../crd/keys.ts";
import { escapePointer, type JsonPatchOp } from "../kube/json-patch.ts";
import { parseTime, rfc3339 } from "../util/time.ts";

/** TimeoutChange says which clocks to move; absent fields stay as they are. */
export interface TimeoutChange {
  /** idleTimeout in seconds; 0 removes the idle timeout. */
  idleTimeout?: number;
  /** lifetime sets end-at to now + seconds ("set"), or only moves it later ("extend", a refresh). */
  lifetime?: { seconds: number; mode: "set" | "extend" };
}

/** timeoutChange reads `POST /v1/sandboxes/{id}/timeout`: `timeout` sets the lifetime from now. */
export function timeoutChange(req: { timeout?: number; idleTimeout?: number }): TimeoutChange {
  return {
    ...(req.idleTimeout !== undefined ? { idleTimeout: req.idleTimeout } : {}),
    ...(req.timeout !== undefined ? { lifetime: { seconds: req.timeout, mode: "set" as const } } : {}),
  };
}

const annotationPath = (key: string) => `/metadata/annotations/${escapePointer(key)}`;

/**
 * endAtAfter is the end-at a lifetime change gives: now + seconds, except that an extension
 * never shortens the current end-at, and a sandbox without one (unlimited) stays unlimited.
 */
export function endAtAfter(
  current: string | undefined,
  lifetime: NonNullable<TimeoutChange["lifetime"]>,
  now: Date,
): string | undefined {
  const next = new Date(now.getTime() + lifetime.seconds * 1000);
  if (lifetime.mode === "set") return rfc3339(next);
  const prev = parseTime(current);
  if (!prev) return undefined;
  return rfc3339(next > prev ? next : prev);
}

/**
 * timeoutPatch is the preconditioned patch for a change on the pod as read, or [] when nothing
 * would change (no write needed).
 */
export function timeoutPatch(pod: V1Pod, id: string, change: TimeoutChange, now: Date): JsonPatchOp[] {
  const annotations = pod.metadata?.annotations ?? {};
  const ops: JsonPatchOp[] = [];
  if (change.idleTimeout !== undefined) {
    const path = annotationPath(IDLE_TIMEOUT_ANNOTATION);
    if (change.idleTimeout > 0 && annotations[IDLE_TIMEOUT_ANNOTATION] !== String(change.idleTimeout))
      ops.push({ op: "add", path, value: String(change.idleTimeout) });
    if (change.idleTimeout === 0 && annotations[IDLE_TIMEOUT_ANNOTATION] !== undefined)
      ops.push({ op: "remove", path });
  }
  if (change.lifetime) {
    const endAt = endAtAfter(annotations[END_AT_ANNOTATION], change.lifetime, now);
    if (endAt && endAt !== annotations[END_AT_ANNOTATION])
      ops.push({ op: "add", path: annotationPath(END_AT_ANNOTATION), value: endAt });
    // An explicit end wins over a lifetime still waiting for the start.
    if (endAt && annotations[LIFETIME_ANNOTATION] !== undefined)
      ops.push({ op: "remove", path: annotationPath(LIFETIME_ANNOTATION) });
  }
  if (ops.length === 0) return [];
  return [
    { op: "test", path: "/metadata/resourceVersion", value: pod.metadata?.resourceVersion ?? "" },
    { op: "test", path: `/metadata/labels/${escapePointer(SANDBOX_ID_LABEL)}`, value: id },
    ...ops,
  ];
}
