import type { V1Pod } from "@kubernetes/client-node";
import {
  POST_START_HOOKS_ANNOTATION,
  SANDBOX_ID_LABEL,
  STARTED_AT_ANNOTATION,
  STOP_REASON,
} from "../crd/keys.ts";
import { type Action, podTarget } from "../kube/action.ts";
import { escapePointer } from "../kube/json-patch.ts";
import { toJsonPatch } from "../lifecycle/intent-patch.ts";
import { type ResetSource, releaseIntent, resetFrom } from "../lifecycle/release-intent.ts";
import { parseTime } from "../util/time.ts";

/** HOOK_FAILURE_REASON is the failure reason of a sandbox whose post-start hooks failed. */
export const HOOK_FAILURE_REASON = "PostStartHookFailed";

/** HookRun is how running one pod's hooks went: done, or the error of the last attempt. */
export type HookRun = { ok: true } | { ok: false; error: string };

/**
 * planHookOutcome turns a pod's hook run into writes. Success removes the hooks annotation, with a
 * patch that tests its value and the sandbox id (so a later claim's hooks are never dropped); the
 * sandbox is then ready. A failure is retried by later runs until deadlineSeconds after the start,
 * then the sandbox is released with stop reason Failed and failure reason PostStartHookFailed,
 * which puts the pod back through Stopping → Idle with the error in its record.
 */
export function planHookOutcome(
  pod: V1Pod,
  run: HookRun,
  reset: ResetSource,
  deadlineSeconds: number,
  now: Date,
): Action[] {
  const annotations = pod.metadata?.annotations ?? {};
  const hooks = annotations[POST_START_HOOKS_ANNOTATION];
  const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL];
  if (hooks === undefined || !id) return [];
  if (run.ok)
    return [
      {
        target: podTarget(pod),
        why: "post-start hooks completed",
        write: {
          op: "patch",
          patch: [
            { op: "test", path: `/metadata/labels/${escapePointer(SANDBOX_ID_LABEL)}`, value: id },
            {
              op: "test",
              path: `/metadata/annotations/${escapePointer(POST_START_HOOKS_ANNOTATION)}`,
              value: hooks,
            },
            { op: "remove", path: `/metadata/annotations/${escapePointer(POST_START_HOOKS_ANNOTATION)}` },
          ],
        },
        event: {
          type: "Normal",
          reason: "PostStartHooks",
          action: "Run",
          note: "post-start hooks completed",
        },
      },
    ];
  const started = parseTime(annotations[STARTED_AT_ANNOTATION]);
  if (started && now.getTime() - started.getTime() < deadlineSeconds * 1000) return [];
  const message = `post-start hook failed: ${run.error}`;
  const result = releaseIntent(
    pod,
    {
      ...resetFrom(reset),
      stopReason: STOP_REASON.FAILED,
      failureReason: HOOK_FAILURE_REASON,
      failureMessage: message,
    },
    now,
  );
  if (!result.ok) return [];
  return [
    {
      target: podTarget(pod),
      why: `release sandbox: ${message}`,
      write: { op: "patch", patch: toJsonPatch(pod, result.intent) },
      event: { type: "Warning", reason: HOOK_FAILURE_REASON, action: "Release", note: message },
    },
  ];
}
