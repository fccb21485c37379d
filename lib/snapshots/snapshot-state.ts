// The pause and resume decisions over one SandboxSnapshot: pure functions of the object (and the
// pod it names) to what a host should write next. Every write they lead to is preconditioned on
// the object's resourceVersion, so two hosts deciding at once conflict instead of both acting.
import type { V1Pod } from "@kubernetes/client-node";
import {
  INCARNATION_ANNOTATION,
  RESUME_ATTEMPT_ANNOTATION,
  SANDBOX_ID_LABEL,
  SANDBOX_PHASE,
  SANDBOX_POOL_LABEL,
  SEALED_ENV_VARS_ANNOTATION,
  TEAM_LABEL,
  USER_LABEL,
} from "../crd/keys.ts";
import {
  type SandboxSnapshot,
  SNAPSHOT_FINALIZER,
  SNAPSHOT_PHASE,
  type SnapshotPhase,
} from "../crd/sandbox-snapshot.ts";
import { isTerminating } from "../kube/action.ts";
import { isLabelValue } from "../kube/label-value.ts";
import { sandboxPhaseOf } from "../lifecycle/phase-label.ts";
import { abandonPause, commitOverdue, committedLate, type PauseAbandon } from "./abandoned-pause.ts";
import { pauseMarkOf } from "./pause-mark.ts";
import type { PausePlan } from "./pause-plan.ts";
import { runsSource, sourceState } from "./pause-plan.ts";

/** phaseOf is a snapshot's phase; a snapshot created but not yet given one is Committing. */
export function phaseOf(s: SandboxSnapshot): SnapshotPhase {
  return s.status?.phase ?? SNAPSHOT_PHASE.COMMITTING;
}

/** isCommitted: the agent committed this generation's source (status.images are its images). */
export function isCommitted(s: SandboxSnapshot): boolean {
  return phaseOf(s) === SNAPSHOT_PHASE.COMMITTED && s.status?.observedGeneration === s.metadata?.generation;
}

/** isFailed: the agent could not commit this generation's source. */
export function isFailed(s: SandboxSnapshot): boolean {
  return phaseOf(s) === SNAPSHOT_PHASE.FAILED && s.status?.observedGeneration === s.metadata?.generation;
}

type OkPlan = Extract<PausePlan, { ok: true }>;

/** snapshotObject is the snapshot a pause writes: a new one, or existing with the new pause's spec. */
export function snapshotObject(namespace: string, plan: OkPlan, existing?: SandboxSnapshot): SandboxSnapshot {
  const labels: Record<string, string> = {
    ...existing?.metadata?.labels,
    [SANDBOX_ID_LABEL]: plan.sandboxId,
    [SANDBOX_POOL_LABEL]: plan.pool,
    ...(isLabelValue(plan.claim.team) && plan.claim.team ? { [TEAM_LABEL]: plan.claim.team } : {}),
    ...(plan.claim.user && isLabelValue(plan.claim.user) ? { [USER_LABEL]: plan.claim.user } : {}),
  };
  const finalizers = [...new Set([...(existing?.metadata?.finalizers ?? []), SNAPSHOT_FINALIZER])];
  return {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxSnapshot",
    metadata: { ...existing?.metadata, name: plan.sandboxId, namespace, labels, finalizers },
    spec: {
      sandboxId: plan.sandboxId,
      pool: plan.pool,
      ...(existing?.spec.env ? { env: existing.spec.env } : {}),
      source: plan.source,
      claim: plan.claim,
      retainUntil: plan.retainUntil,
    },
    ...(existing?.status ? { status: existing.status } : {}),
  };
}

/** PauseStart is what a pause does given the sandbox's snapshot (if any). */
export type PauseStart =
  | { kind: "create" }
  | { kind: "replace" }
  | { kind: "wait" }
  | { kind: "refuse"; reason: "paused" | "not-running"; message: string };

/**
 * pauseStart decides a pause over an existing snapshot: none → create; one being committed for
 * this very pod → wait for it (a repeated or concurrent pause joins it); paused → refused (E2B
 * answers 409); resuming → refused (not running yet); resumed, failed, a commit of another pod
 * (a pause that lost its pod) or one past its deadline → replace it with this pause (a new
 * generation).
 */
export function pauseStart(existing: SandboxSnapshot | undefined, plan: OkPlan, now: Date): PauseStart {
  if (!existing) return { kind: "create" };
  if (existing.metadata?.deletionTimestamp)
    return { kind: "refuse", reason: "not-running", message: `sandbox ${plan.sandboxId} is being deleted` };
  const phase = phaseOf(existing);
  if (phase === SNAPSHOT_PHASE.PAUSED)
    return { kind: "refuse", reason: "paused", message: `sandbox ${plan.sandboxId} is already paused` };
  if (phase === SNAPSHOT_PHASE.RESUMING)
    return { kind: "refuse", reason: "not-running", message: `sandbox ${plan.sandboxId} is resuming` };
  // The same pod with the same container instances: a restart since makes a new commit.
  const samePod =
    existing.spec.source.podUID === plan.source.podUID &&
    plan.source.containers.every(
      (c) => existing.spec.source.containers.find((e) => e.name === c.name)?.containerID === c.containerID,
    );
  if (phase === SNAPSHOT_PHASE.COMMITTED && samePod) return { kind: "wait" };
  if (phase === SNAPSHOT_PHASE.COMMITTING && samePod && !commitOverdue(existing, now))
    return { kind: "wait" };
  return { kind: "replace" };
}

/** PauseCompletion is the next write of a committed pause, or the undoing of one that cannot be. */
export type PauseCompletion =
  | { kind: "none" }
  | { kind: "mark-pod" }
  | { kind: "mark-paused" }
  | { kind: "release" }
  | PauseAbandon;

/**
 * pauseCompletion finishes a pause: once committed, and while the pod still runs the sandbox as
 * recorded, the pod is marked with the pause (lib/snapshots/pause-mark.ts: no other release ends
 * it from then on), the snapshot marked Paused and the pod released (a crash in between leaves a
 * Paused snapshot whose pod its pause still has to release, pauseReleases: "release" converges
 * it, even after a container restarted). A pod that no longer runs
 * it as recorded ends the pause (abandonPause): a kill or an expiry wins and the snapshot goes; a
 * container restarted during the commit leaves the sandbox running on what it ran before. A
 * commit that came after the pause's deadline is abandoned the same way (committedLate).
 */
export function pauseCompletion(s: SandboxSnapshot, pod: V1Pod | undefined): PauseCompletion {
  if (s.metadata?.deletionTimestamp) return { kind: "none" };
  const runs = runsSource(pod, s.spec.sandboxId, s.spec.source);
  const phase = phaseOf(s);
  if (isCommitted(s)) {
    if (committedLate(s)) return abandonPause(s, pod, "its commit came after the pause's deadline");
    if (!runs) return abandonPause(s, pod, "a container restarted during its pause");
    return pauseMarkOf(pod) === s.metadata?.generation ? { kind: "mark-paused" } : { kind: "mark-pod" };
  }
  if (phase === SNAPSHOT_PHASE.PAUSED) return pauseReleases(s, pod) ? { kind: "release" } : { kind: "none" };
  if (isFailed(s) && !runs) return abandonPause(s, pod, "the pause failed");
  return { kind: "none" };
}

/**
 * pauseReleases: the Paused snapshot's pause still has to release `pod`: the pod runs the sandbox
 * as the pause recorded it, or the pause's mark holds it (heldByPause) and it still runs the
 * sandbox after a container restarted. Once Paused the files are committed and the caller told,
 * so a restart since changes nothing: the pause releases the pod, with no terminal record.
 */
export function pauseReleases(s: SandboxSnapshot, pod: V1Pod | undefined): boolean {
  if (phaseOf(s) !== SNAPSHOT_PHASE.PAUSED || s.metadata?.deletionTimestamp || !pod) return false;
  const state = sourceState(pod, s.spec.sandboxId, s.spec.source);
  if (state === "runs") return true;
  return state === "restarted" && sandboxPhaseOf(pod) === SANDBOX_PHASE.RUNNING && heldByPause(pod, s);
}

/**
 * heldByPause: the pod's sandbox is in a pause that will release it (its mark names the snapshot's
 * generation, which is committed or Paused for this pod and not deleted), so no other release may
 * end it. A mark the snapshot no longer backs (the pause was abandoned, the snapshot is gone, or
 * another sandbox or a newer pause holds it) holds nothing: the pod is released as any other.
 */
export function heldByPause(pod: V1Pod, s: SandboxSnapshot | undefined): boolean {
  const mark = pauseMarkOf(pod);
  if (mark === undefined || !s || s.metadata?.deletionTimestamp) return false;
  if (s.metadata?.generation !== mark) return false;
  if (s.spec.source.podUID !== pod.metadata?.uid) return false;
  if (s.spec.sandboxId !== pod.metadata?.labels?.[SANDBOX_ID_LABEL]) return false;
  return isCommitted(s) || phaseOf(s) === SNAPSHOT_PHASE.PAUSED;
}

/** ResumeStart is what a resume does given the snapshot. */
export type ResumeStart =
  | { kind: "claim" }
  | { kind: "adopt"; pod: string }
  | { kind: "finish-pause" }
  | { kind: "wait" }
  | { kind: "running" }
  | { kind: "refuse"; reason: "pausing" | "not-found"; message: string };

/**
 * resumeStart: a Paused snapshot (or a Resuming one whose resume ran out of time: its host is gone)
 * is claimed by this resume; one Resuming within its time is another resume's, so this one waits
 * for it (two resumes give one sandbox); Resumed is running; a pause under way is refused. A
 * Resuming one past its time whose resume had claimed a pod (a live pod of `carriers`, the pods
 * with the sandbox's id, carries its attempt) is adopted: it runs there, as the sweep decides. A
 * Paused one whose `sourcePod` its pause still has to release (pauseReleases: it runs the sandbox,
 * or is held by the pause's mark after a container restarted) is a pause to finish first.
 */
export function resumeStart(
  s: SandboxSnapshot,
  now: Date,
  carriers: readonly V1Pod[] = [],
  sourcePod?: V1Pod,
): ResumeStart {
  if (s.metadata?.deletionTimestamp)
    return { kind: "refuse", reason: "not-found", message: `sandbox ${s.spec.sandboxId} is being deleted` };
  const phase = phaseOf(s);
  // Paused, but its pod not released yet (its pauser died between the two writes): finish the
  // pause first, or the sandbox would run on two pods.
  if (phase === SNAPSHOT_PHASE.PAUSED)
    return pauseReleases(s, sourcePod) ? { kind: "finish-pause" } : { kind: "claim" };
  if (phase === SNAPSHOT_PHASE.RESUMING) {
    const until = Date.parse(s.status?.resume?.until ?? "");
    if (Number.isFinite(until) && until > now.getTime()) return { kind: "wait" };
    const claimed = claimedBy(s, carriers);
    return claimed ? { kind: "adopt", pod: claimed.metadata?.name ?? "" } : { kind: "claim" };
  }
  if (phase === SNAPSHOT_PHASE.RESUMED || phase === SNAPSHOT_PHASE.FAILED) return { kind: "running" };
  return {
    kind: "refuse",
    reason: "pausing",
    message: `sandbox ${s.spec.sandboxId} is pausing; try again shortly`,
  };
}

/** claimedBy is the live pod that carries the snapshot's resume attempt (its claim landed). */
export function claimedBy(s: SandboxSnapshot, carriers: readonly V1Pod[]): V1Pod | undefined {
  const attempt = s.status?.resume?.attempt;
  return attempt
    ? carriers.find(
        (p) => !isTerminating(p) && p.metadata?.annotations?.[RESUME_ATTEMPT_ANNOTATION] === attempt,
      )
    : undefined;
}

/** ResumeClaim is what a resume's claim writes, besides the pool's own (lib/lifecycle ClaimOptions). */
export interface ResumeClaim {
  containerImages: Record<string, string>;
  team: string;
  user?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  metadata?: Record<string, string>;
  idleTimeoutSeconds?: number;
  startupTimeoutSeconds?: number;
  lifetimeSeconds?: number;
  marks: { labels: Record<string, string>; annotations: Record<string, string> };
  sealedEnvVars?: string;
}

/**
 * resumeClaim is the claim of a resume: the snapshot images for the committed containers (the
 * others as first asked), the first claim's owner, metadata, caller keys and network marks, the
 * lifetime left at the pause unless the resume asks for another, the sealed env vars, and the
 * marks that tie the pod to this resume (attempt) and to the sandbox's next envd token (incarnation).
 */
export function resumeClaim(s: SandboxSnapshot, attempt: string, timeoutSeconds?: number): ResumeClaim {
  const c = s.spec.claim;
  const incarnation = (s.status?.resumes ?? 0) + 1;
  const lifetime = timeoutSeconds && timeoutSeconds >= 1 ? Math.floor(timeoutSeconds) : c.lifetimeSeconds;
  return {
    containerImages: { ...c.containerImages, ...s.status?.images },
    team: c.team,
    ...(c.user ? { user: c.user } : {}),
    ...(c.labels ? { labels: c.labels } : {}),
    ...(c.annotations ? { annotations: c.annotations } : {}),
    ...(c.metadata ? { metadata: c.metadata } : {}),
    ...(c.idleTimeoutSeconds ? { idleTimeoutSeconds: c.idleTimeoutSeconds } : {}),
    ...(c.startupTimeoutSeconds ? { startupTimeoutSeconds: c.startupTimeoutSeconds } : {}),
    ...(lifetime ? { lifetimeSeconds: lifetime } : {}),
    marks: {
      labels: { ...c.markLabels },
      annotations: {
        ...c.markAnnotations,
        [INCARNATION_ANNOTATION]: String(incarnation),
        [RESUME_ATTEMPT_ANNOTATION]: attempt,
        ...(c.sealedEnvVars ? { [SEALED_ENV_VARS_ANNOTATION]: c.sealedEnvVars } : {}),
      },
    },
    ...(c.sealedEnvVars ? { sealedEnvVars: c.sealedEnvVars } : {}),
  };
}
