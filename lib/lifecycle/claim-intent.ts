// Claiming hands an idle pod to one sandbox: its images, identity, owner, timeouts and caller
// metadata are written in the same patch that moves the phase label, so no other claim can take
// the pod in between and a crash leaves either an idle pod or a fully claimed one.
import type { V1Pod } from "@kubernetes/client-node";
import type { InplaceUpdateState } from "../crd/annotations.ts";
import {
  CLAIMED_AT_ANNOTATION,
  CLAIMED_BY_LABEL,
  END_AT_ANNOTATION,
  IDLE_TIMEOUT_ANNOTATION,
  INPLACE_UPDATE_PHASE,
  INPLACE_UPDATE_STATE_ANNOTATION,
  LAST_ACTIVE_ANNOTATION,
  LIFETIME_ANNOTATION,
  MANAGED_ANNOTATION_KEYS_ANNOTATION,
  MANAGED_BY_LABEL,
  MANAGED_BY_SANDBOX_API_SERVER,
  MANAGED_LABEL_KEYS_ANNOTATION,
  POST_START_HOOKS_ANNOTATION,
  SANDBOX_ID_ANNOTATION,
  SANDBOX_ID_LABEL,
  SANDBOX_METADATA_ANNOTATION,
  SANDBOX_PHASE,
  SANDBOX_PHASE_LABEL,
  SCALE_DOWN_PROTECTED_ANNOTATION,
  STARTED_AT_ANNOTATION,
  STARTUP_TIMEOUT_ANNOTATION,
  TEAM_LABEL,
  USER_LABEL,
  WAITER_UNTIL_ANNOTATION,
} from "../crd/keys.ts";
import { isLabelValue } from "../kube/label-value.ts";
import { rfc3339 } from "../util/time.ts";
import { stableContainerStatuses } from "./completion.ts";
import { sameImage } from "./image-reference.ts";
import { planImageSwap } from "./image-swap.ts";
import { encodeInplaceState } from "./inplace-state.ts";
import { isReservedKey, SANDBOX_ANNOTATIONS, SANDBOX_LABELS } from "./lifecycle-keys.ts";
import { sandboxPhaseOf } from "./phase-label.ts";
import type { IntentResult } from "./pod-intent.ts";
import { servedContainers } from "./served-containers.ts";

/** ClaimOptions is what a sandbox create request resolved to for one pool. */
export interface ClaimOptions {
  /** sandboxId is the new sandbox's id; it is also a label value (≤ 63 characters). */
  sandboxId: string;
  /** containerImages maps container name → image to run (at least one). */
  containerImages: Readonly<Record<string, string>>;
  team?: string;
  user?: string;
  /** labels and annotations are the caller's own; recorded so release removes exactly them. */
  labels?: Readonly<Record<string, string>>;
  annotations?: Readonly<Record<string, string>>;
  /** Timeouts in seconds, written when > 0 (fractions are dropped). */
  idleTimeoutSeconds?: number;
  startupTimeoutSeconds?: number;
  /**
   * lifetimeSeconds is the sandbox's lifetime (E2B's timeout): end-at is claim + lifetime, moved to
   * start + lifetime when it starts running, so a slow start does not eat it.
   */
  lifetimeSeconds?: number;
  /** metadata is the caller's sandbox metadata, stored as JSON when non-empty. */
  metadata?: Readonly<Record<string, string>>;
  /** postStartHooks are run by the controller after Starting → Running; stored as JSON. */
  postStartHooks?: readonly unknown[];
  /**
   * waiterUntil: the create waits for Running until then and completes the start itself; the
   * reconcile runs leave it that long (WAITER_UNTIL_ANNOTATION, ADR 0022).
   */
  waiterUntil?: Date;
  /**
   * claimedBy is the claiming host's CLAIMED_BY_LABEL value (claimedByValue of its instance id),
   * so that host's watch of its waiting creates' pods selects this pod (ADR 0037); none when unset.
   */
  claimedBy?: string;
  /**
   * marks are control-plane labels and annotations a create adds for the sandbox (its egress label,
   * network settings, private traffic). Unlike the caller's own they may be reserved keys, but only
   * those SANDBOX_LABELS and SANDBOX_ANNOTATIONS list, so the return to idle removes them.
   */
  marks?: { labels?: Readonly<Record<string, string>>; annotations?: Readonly<Record<string, string>> };
}

const sortedKeysJson = (keys: Iterable<string>) => JSON.stringify([...keys].sort());

function seconds(value: number | undefined): string | undefined {
  if (value === undefined || !Number.isFinite(value)) return undefined;
  const whole = Math.floor(value);
  return whole > 0 ? String(whole) : undefined;
}

/**
 * claimIntent moves an idle pod to starting with the requested images. It records the claim
 * (sandbox-id label and annotation, claimed-at, managed-by, claimed-by, team/user, timeouts,
 * end-at, metadata, post-start hooks, the caller's labels/annotations and their keys in
 * managed-*-keys), clears
 * scale-down protection and any per-sandbox leftovers, and writes a starting in-place update
 * state with the changed containers and their current ids. A container that served an earlier
 * sandbox (servedContainers) is restarted too, on restartReference's spelling of its image when
 * that stays; one that cannot be restarted refuses the claim. When the pod already runs every
 * requested image (same image after normalising) in fresh containers, it skips the pull and goes
 * straight to running with a completed state, as agentbox does; that needs a Running pod.
 */
export function claimIntent(pod: V1Pod, options: ClaimOptions, now: Date): IntentResult {
  const fail = (reason: string): IntentResult => ({ ok: false, reason });
  const phase = sandboxPhaseOf(pod);
  if (phase !== SANDBOX_PHASE.IDLE) return fail(`pod is ${phase ?? "not in a sandbox phase"}, not idle`);
  if (pod.metadata?.deletionTimestamp) return fail("pod is being deleted");
  const id = options.sandboxId;
  if (!isLabelValue(id)) return fail(`sandbox id ${JSON.stringify(id)} is not a valid label value`);
  const by = options.claimedBy;
  if (by !== undefined && !isLabelValue(by))
    return fail(`claimed-by ${JSON.stringify(by)} is not a valid label value`);
  const callerLabels = options.labels ?? {};
  const callerAnnotations = options.annotations ?? {};
  const reserved = [...Object.keys(callerLabels), ...Object.keys(callerAnnotations)].filter(isReservedKey);
  if (reserved.length > 0) return fail(`reserved keys cannot be set by the caller: ${reserved.join(", ")}`);
  const markLabels = options.marks?.labels ?? {};
  const markAnnotations = options.marks?.annotations ?? {};
  const unlisted = [
    ...Object.keys(markLabels).filter((k) => !SANDBOX_LABELS.includes(k)),
    ...Object.keys(markAnnotations).filter((k) => !SANDBOX_ANNOTATIONS.includes(k)),
  ];
  if (unlisted.length > 0) return fail(`marks the return to idle would not remove: ${unlisted.join(", ")}`);
  // A container that served an earlier sandbox is restarted, even on the image asked for.
  const swap = planImageSwap(pod, options.containerImages, {
    restart: servedContainers(pod),
    same: sameImage,
  });
  if (!swap.ok) return swap;
  if (swap.unrestartable.length > 0)
    return fail(
      `containers ${swap.unrestartable.join(", ")} served an earlier sandbox and cannot be restarted in place; the pod must be replaced`,
    );
  const sameImages = Object.keys(swap.changed).length === 0;
  if (sameImages && pod.status?.phase !== "Running")
    return fail(
      `pod already has the requested images but is ${pod.status?.phase ?? "without status"}, not Running`,
    );

  const at = rfc3339(now);
  const setLabels: Record<string, string> = {
    ...callerLabels,
    ...markLabels,
    [SANDBOX_ID_LABEL]: id,
    [MANAGED_BY_LABEL]: MANAGED_BY_SANDBOX_API_SERVER,
    ...(options.team ? { [TEAM_LABEL]: options.team } : {}),
    ...(options.user ? { [USER_LABEL]: options.user } : {}),
    ...(by !== undefined ? { [CLAIMED_BY_LABEL]: by } : {}),
    [SANDBOX_PHASE_LABEL]: sameImages ? SANDBOX_PHASE.RUNNING : SANDBOX_PHASE.STARTING,
  };
  const state: InplaceUpdateState = sameImages
    ? {
        phase: INPLACE_UPDATE_PHASE.COMPLETED,
        targetPodPhase: SANDBOX_PHASE.RUNNING,
        updateTimestamp: at,
        stableContainerStatuses: stableContainerStatuses(pod, options.containerImages),
      }
    : {
        phase: INPLACE_UPDATE_PHASE.STARTING,
        ...(swap.targetImage ? { targetImage: swap.targetImage } : {}),
        targetImages: swap.changed,
        targetPodPhase: SANDBOX_PHASE.RUNNING,
        updateTimestamp: at,
        lastContainerStatuses: swap.last,
      };
  const idleTimeout = seconds(options.idleTimeoutSeconds);
  const startupTimeout = seconds(options.startupTimeoutSeconds);
  // A claim that skips the start (same images) runs at once: its end-at is final.
  const lifetime = seconds(options.lifetimeSeconds);
  const metadata = options.metadata ?? {};
  const hooks = options.postStartHooks ?? [];
  const setAnnotations: Record<string, string> = {
    ...callerAnnotations,
    ...markAnnotations,
    [SANDBOX_ID_ANNOTATION]: id,
    [CLAIMED_AT_ANNOTATION]: at,
    ...(idleTimeout ? { [IDLE_TIMEOUT_ANNOTATION]: idleTimeout } : {}),
    ...(startupTimeout ? { [STARTUP_TIMEOUT_ANNOTATION]: startupTimeout } : {}),
    ...(lifetime
      ? {
          [LIFETIME_ANNOTATION]: lifetime,
          [END_AT_ANNOTATION]: rfc3339(new Date(now.getTime() + Number(lifetime) * 1000)),
        }
      : {}),
    ...(Object.keys(metadata).length > 0 ? { [SANDBOX_METADATA_ANNOTATION]: JSON.stringify(metadata) } : {}),
    ...(hooks.length > 0 ? { [POST_START_HOOKS_ANNOTATION]: JSON.stringify(hooks) } : {}),
    ...(options.waiterUntil ? { [WAITER_UNTIL_ANNOTATION]: rfc3339(options.waiterUntil) } : {}),
    // Team and user stay until the pod is idle again: the stop record needs them.
    [MANAGED_LABEL_KEYS_ANNOTATION]: sortedKeysJson(
      Object.keys(callerLabels).filter((k) => k !== TEAM_LABEL && k !== USER_LABEL),
    ),
    [MANAGED_ANNOTATION_KEYS_ANNOTATION]: sortedKeysJson(Object.keys(callerAnnotations)),
    ...(sameImages ? { [STARTED_AT_ANNOTATION]: at, [LAST_ACTIVE_ANNOTATION]: at } : {}),
    [INPLACE_UPDATE_STATE_ANNOTATION]: encodeInplaceState(state),
  };
  return {
    ok: true,
    intent: {
      expectPhase: SANDBOX_PHASE.IDLE,
      setLabels,
      removeLabels: SANDBOX_LABELS.filter((k) => !(k in setLabels)),
      setAnnotations,
      removeAnnotations: [SCALE_DOWN_PROTECTED_ANNOTATION, ...SANDBOX_ANNOTATIONS].filter(
        (k) => !(k in setAnnotations),
      ),
      containerImages: sameImages ? {} : swap.changed,
    },
  };
}
