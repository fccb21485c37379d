// Releasing ends a sandbox: the pod is reset to the pool's idle images in place, and everything
// the history record needs (why and when it stopped, which images ran, which container) is
// written in the same patch, because the reset replaces the containers that held those facts.
import type { V1Pod } from "@kubernetes/client-node";
import type { InplaceUpdateState } from "../crd/annotations.ts";
import {
  CLAIMED_BY_LABEL,
  CONTAINER_ID_ANNOTATION,
  EXIT_CODE_ANNOTATION,
  FAILURE_MESSAGE_ANNOTATION,
  FAILURE_REASON_ANNOTATION,
  IDLE_TIMEOUT_ANNOTATION,
  INPLACE_UPDATE_PHASE,
  INPLACE_UPDATE_STATE_ANNOTATION,
  LAST_ACTIVE_ANNOTATION,
  MANAGED_ANNOTATION_KEYS_ANNOTATION,
  MANAGED_BY_LABEL,
  MANAGED_LABEL_KEYS_ANNOTATION,
  REPLACE_ON_RESET_ANNOTATION,
  RUNNING_IMAGES_ANNOTATION,
  SANDBOX_PHASE,
  SANDBOX_PHASE_LABEL,
  type SandboxStopReason,
  STOP_REASON,
  STOP_REASON_ANNOTATION,
  TERMINATED_AT_ANNOTATION,
} from "../crd/keys.ts";
import { parseTime, rfc3339 } from "../util/time.ts";
import { planImageSwap } from "./image-swap.ts";
import { encodeInplaceState, readInplaceState } from "./inplace-state.ts";
import { managedKeys, unique } from "./lifecycle-keys.ts";
import { sandboxPhaseOf } from "./phase-label.ts";
import type { IntentResult } from "./pod-intent.ts";
import { outdatedFor } from "./pod-revision.ts";

/** PodReset is how a pool's released pods start afresh (see podReset in lib/pool/render-pod.ts). */
export interface PodReset {
  /** idleImages maps container name → the pool's idle image (IdleContainerImages). */
  idleImages: Readonly<Record<string, string>>;
  /** replace: the pool's reset policy is Replace (delete the pod, the pool makes a new one). */
  replace?: boolean;
  /**
   * revision is the pool's current pod revision, given once the pool can replace outdated pods
   * without a gap (podReset): a pod labelled with another one is then replaced instead of reset (a
   * rollout, ADR 0031); an unlabelled pod counts as current.
   */
  revision?: string;
}

/**
 * ResetSource is a pool's PodReset or a function that computes it. The planners of the reconcile
 * steps call it only for a pod they release: computing it hashes the pool's pod template
 * (podRevision), and nearly every run releases nothing, while every run and every waiting create
 * runs those planners.
 */
export type ResetSource = PodReset | (() => PodReset);

/** resetFrom is the PodReset a source gives. */
export const resetFrom = (source: ResetSource): PodReset =>
  typeof source === "function" ? source() : source;

/** ReleaseOptions is agentbox's ReleaseSandboxPodOptions plus the pool's reset. */
export interface ReleaseOptions extends PodReset {
  /** stopReason defaults to Completed. */
  stopReason?: SandboxStopReason;
  /** terminatedAt is RFC 3339; defaults to now. */
  terminatedAt?: string;
  /** failureReason is machine-readable, e.g. IdleTimeout, OOMKilled. */
  failureReason?: string;
  failureMessage?: string;
  exitCode?: number;
  /** replaceBecause: replace the pod instead of resetting it, for this reason (a timed-out start). */
  replaceBecause?: string;
  /** expectPhase is running (default when the pod is running) or starting (cancel a start). */
  expectPhase?: typeof SANDBOX_PHASE.RUNNING | typeof SANDBOX_PHASE.STARTING;
}

const STOP_REASONS = new Set<string>(Object.values(STOP_REASON));

/** REPLACE_BY_POLICY is REPLACE_ON_RESET_ANNOTATION's value when the pool asked for replacement. */
export const REPLACE_BY_POLICY = "the pool's reset policy is Replace";

/** REPLACE_BY_ROLLOUT is REPLACE_ON_RESET_ANNOTATION's value for a pod of an outdated pod revision. */
export const REPLACE_BY_ROLLOUT = "the pod is of an outdated pod revision (rollout)";

/**
 * runtimeContainerId is the sandbox's runtime container id for the record: the snapshot taken
 * when it started running (first spec container that has one); unless `fromStatus` is false,
 * else the live status of the first spec container that reports one (a sandbox released while
 * still starting has no snapshot). The stop record passes false: while stopping, the live id may
 * already be the idle container's.
 */
export function runtimeContainerId(pod: V1Pod, fromStatus = true): string | undefined {
  const containers = pod.spec?.containers ?? [];
  const stable = readInplaceState(pod).state?.stableContainerStatuses ?? {};
  for (const c of containers) if (stable[c.name]?.containerID) return stable[c.name]?.containerID;
  if (!fromStatus) return undefined;
  const statuses = pod.status?.containerStatuses ?? [];
  for (const c of containers) {
    const id = statuses.find((s) => s.name === c.name)?.containerID;
    if (id) return id;
  }
  return undefined;
}

/**
 * releaseIntent moves a running (or still starting) pod to stopping and starts every one of its
 * containers afresh: swapped back to the pool's idle image, or restarted on it when it already
 * runs it (restartReference), so nothing of this sandbox reaches the next; a pod whose pool resets
 * by replacement, of an outdated pod revision (a rollout), or with a container that cannot be
 * restarted in place, keeps its images and is
 * marked REPLACE_ON_RESET_ANNOTATION (planStopping deletes it after the record). It writes the stop metadata (reason, default Completed; a
 * Released sandbox that was still starting is recorded as Canceled;
 * terminated-at, default now; failure reason/message; exit code), a JSON snapshot of the images
 * that ran and the runtime container id, and removes what only a live sandbox needs (managed-by,
 * claimed-by, the caller's managed labels and annotations, idle timeout, last-active). Identity, owner and
 * timing stay until the pod is idle again, for the stop record.
 */
export function releaseIntent(pod: V1Pod, options: ReleaseOptions, now: Date): IntentResult {
  const fail = (reason: string): IntentResult => ({ ok: false, reason });
  const phase = sandboxPhaseOf(pod);
  const expect =
    options.expectPhase ??
    (phase === SANDBOX_PHASE.STARTING ? SANDBOX_PHASE.STARTING : SANDBOX_PHASE.RUNNING);
  if (expect !== SANDBOX_PHASE.RUNNING && expect !== SANDBOX_PHASE.STARTING)
    return fail(`cannot release from ${expect}`);
  if (phase !== expect) return fail(`pod is ${phase ?? "not in a sandbox phase"}, not ${expect}`);
  const asked = options.stopReason ?? STOP_REASON.COMPLETED;
  if (!STOP_REASONS.has(asked)) return fail(`unknown stop reason ${JSON.stringify(asked)}`);
  // A sandbox released before it ever ran was canceled (seed: "deleted while Starting"); a
  // failure stays a failure.
  const stopReason =
    asked === STOP_REASON.RELEASED && phase === SANDBOX_PHASE.STARTING ? STOP_REASON.CANCELED : asked;
  if (options.terminatedAt !== undefined && !parseTime(options.terminatedAt))
    return fail(`terminatedAt ${JSON.stringify(options.terminatedAt)} is not an RFC 3339 time`);
  const { exitCode } = options;
  if (exitCode !== undefined && !(Number.isInteger(exitCode) && exitCode >= -(2 ** 31) && exitCode < 2 ** 31))
    return fail(`exit code ${exitCode} is not a 32-bit integer`);
  if (Object.keys(options.idleImages).length === 0) return fail("target image is required");
  // Every container served the sandbox: each is swapped to its idle image or, when it already
  // runs that, restarted on it; one that cannot be restarted in place has its pod replaced.
  const containers = pod.spec?.containers ?? [];
  const targets = {
    ...Object.fromEntries(containers.map((c) => [c.name, c.image ?? ""])),
    ...options.idleImages,
  };
  const swap = planImageSwap(pod, targets, { restart: new Set(containers.map((c) => c.name)) });
  if (!swap.ok) return swap;
  const replace = options.replaceBecause
    ? options.replaceBecause
    : options.replace
      ? REPLACE_BY_POLICY
      : outdatedFor(pod, options.revision)
        ? REPLACE_BY_ROLLOUT
        : swap.unrestartable.length > 0
          ? `containers ${swap.unrestartable.join(", ")} cannot be restarted in place (no registry digest to pin)`
          : undefined;

  const at = rfc3339(now);
  const runningImages = Object.fromEntries(
    (pod.spec?.containers ?? [])
      .map((c) => [c.name, c.image ?? ""] as const)
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );
  const containerId = runtimeContainerId(pod);
  // A pod to be replaced keeps its images: it is deleted once its record is stored.
  const changed = replace ? {} : swap.changed;
  const state: InplaceUpdateState = {
    phase: INPLACE_UPDATE_PHASE.STOPPING,
    ...(!replace && swap.targetImage ? { targetImage: swap.targetImage } : {}),
    targetImages: changed,
    targetPodPhase: SANDBOX_PHASE.IDLE,
    updateTimestamp: at,
    lastContainerStatuses: swap.last,
  };
  const setAnnotations: Record<string, string> = {
    [STOP_REASON_ANNOTATION]: stopReason,
    [TERMINATED_AT_ANNOTATION]: options.terminatedAt ?? at,
    [RUNNING_IMAGES_ANNOTATION]: JSON.stringify(runningImages),
    ...(containerId ? { [CONTAINER_ID_ANNOTATION]: containerId } : {}),
    ...(options.failureReason ? { [FAILURE_REASON_ANNOTATION]: options.failureReason } : {}),
    ...(options.failureMessage ? { [FAILURE_MESSAGE_ANNOTATION]: options.failureMessage } : {}),
    ...(exitCode !== undefined ? { [EXIT_CODE_ANNOTATION]: String(exitCode) } : {}),
    ...(replace ? { [REPLACE_ON_RESET_ANNOTATION]: replace } : {}),
    [INPLACE_UPDATE_STATE_ANNOTATION]: encodeInplaceState(state),
  };
  const removeAnnotations = unique([
    IDLE_TIMEOUT_ANNOTATION,
    LAST_ACTIVE_ANNOTATION,
    MANAGED_LABEL_KEYS_ANNOTATION,
    MANAGED_ANNOTATION_KEYS_ANNOTATION,
    ...managedKeys(pod, MANAGED_ANNOTATION_KEYS_ANNOTATION),
    // Stale stop metadata this release does not rewrite must not leak into the record.
    CONTAINER_ID_ANNOTATION,
    FAILURE_REASON_ANNOTATION,
    FAILURE_MESSAGE_ANNOTATION,
    EXIT_CODE_ANNOTATION,
    REPLACE_ON_RESET_ANNOTATION,
  ]).filter((k) => !(k in setAnnotations));
  return {
    ok: true,
    intent: {
      expectPhase: expect,
      setLabels: { [SANDBOX_PHASE_LABEL]: SANDBOX_PHASE.STOPPING },
      // Claimed-by goes with the sandbox: the claiming host's watch of its waiting creates' pods
      // needs none of the reset's events (ADR 0037).
      removeLabels: unique([
        MANAGED_BY_LABEL,
        CLAIMED_BY_LABEL,
        ...managedKeys(pod, MANAGED_LABEL_KEYS_ANNOTATION),
      ]),
      setAnnotations,
      removeAnnotations,
      containerImages: changed,
    },
  };
}
