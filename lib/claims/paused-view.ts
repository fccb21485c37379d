// What the APIs show of a paused sandbox. A paused sandbox holds no pod: everything about it
// (owner, metadata, timeouts, the lifetime it had left, its snapshot images) is read from its
// SandboxSnapshot (lib/crd/sandbox-snapshot.ts), so any host answers from one read. Also the
// native resume's request, the one thing a caller says about a paused sandbox.
import * as v from "valibot";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../crd/sandbox-snapshot.ts";
import type { SandboxView } from "./sandbox-view.ts";

/** PAUSED_PHASE is the view phase of a paused sandbox. */
export const PAUSED_PHASE = "paused" as const;

/**
 * isShownPaused: the snapshot is a sandbox the APIs show as paused — its pod went back to the
 * pool (Paused), or a resume is claiming one (Resuming: until a pod runs it, it is still
 * paused). A snapshot still committing, failed or resumed stands beside a pod, which is the
 * sandbox; without that pod it is a leftover the kill won over, shown as nothing. One being
 * deleted (killed: its images go before it does) is gone already.
 */
export function isShownPaused(snapshot: SandboxSnapshot): boolean {
  if (snapshot.metadata?.deletionTimestamp) return false;
  const phase = snapshot.status?.phase;
  return phase === SNAPSHOT_PHASE.PAUSED || phase === SNAPSHOT_PHASE.RESUMING;
}

/** positive keeps a positive number of seconds, as the pod view reads its timeouts. */
const positive = (n: number | undefined) => (n !== undefined && n > 0 ? n : undefined);

/**
 * pausedView shows a paused sandbox (its SandboxSnapshot) as a SandboxView with phase "paused":
 * no pod (pod ""), no podIP and no endAt (its lifetime does not run while paused: lifetimeSeconds
 * is what it had left), images are its snapshot images, pausedAt, retainUntil and the size of
 * its last pause's layers (snapshotBytes) when known. A resume under way says so in `detail`
 * (since `now`). Optional fields are left out when absent.
 */
export function pausedView(snapshot: SandboxSnapshot, now: Date): SandboxView {
  const { spec, status } = snapshot;
  const claim = spec.claim;
  const optional = <T>(key: string, value: T | undefined) =>
    value !== undefined && value !== "" ? { [key]: value } : {};
  const resuming = status?.phase === SNAPSHOT_PHASE.RESUMING;
  return {
    sandboxId: spec.sandboxId,
    namespace: snapshot.metadata?.namespace ?? "",
    pool: spec.pool,
    pod: "",
    phase: PAUSED_PHASE,
    team: claim.team,
    ...optional("user", claim.user),
    images: { ...(status?.images ?? {}) },
    metadata: { ...(claim.metadata ?? {}) },
    ...optional("idleTimeoutSeconds", positive(claim.idleTimeoutSeconds)),
    ...optional("startupTimeoutSeconds", positive(claim.startupTimeoutSeconds)),
    ...optional("pausedAt", status?.pausedAt ?? status?.committedAt),
    ...optional("lifetimeSeconds", positive(claim.lifetimeSeconds)),
    ...optional("retainUntil", spec.retainUntil),
    ...optional("snapshotBytes", status?.bytes),
    ...(resuming
      ? {
          detail: {
            reason: "Resuming",
            message: "a resume is claiming a pod of its pool for it; it stays paused until one runs it",
            lastUpdatedTime: now.toISOString(),
          },
        }
      : {}),
  };
}

/**
 * pausedAnnotations are the pod annotations a paused sandbox's claim will write again (the
 * caller's own and the control plane's marks: the network settings, the E2B template id), for
 * the answers that read them from a pod.
 */
export function pausedAnnotations(snapshot: SandboxSnapshot): Record<string, string> {
  return { ...(snapshot.spec.claim.annotations ?? {}), ...(snapshot.spec.claim.markAnnotations ?? {}) };
}

const WEEK = 604_800;

/** RESUME_WAIT_SECONDS is how long a native resume waits for Running unless it says otherwise. */
export const RESUME_WAIT_SECONDS = 60;

/**
 * ResumeRequest is the native `POST /v1/sandboxes/{id}/resume` body, optional: `timeout`, the
 * lifetime from the resume in seconds (absent: what the sandbox had left when it was paused), and
 * `waitTimeout`, how long the call waits for the sandbox to run (default RESUME_WAIT_SECONDS; 0
 * answers at once, the sandbox still starting).
 */
export const ResumeRequest = v.optional(
  v.strictObject(
    {
      waitTimeout: v.optional(
        v.pipe(
          v.number("must be a number of seconds"),
          v.integer("must be a whole number of seconds"),
          v.minValue(0, "must be at least 0"),
          v.maxValue(600, "must be at most 600"),
          v.description("seconds to wait for the sandbox to run (default 60; 0: answer at once)"),
        ),
        RESUME_WAIT_SECONDS,
      ),
      timeout: v.optional(
        v.pipe(
          v.number("must be a number of seconds"),
          v.integer("must be a whole number of seconds"),
          v.minValue(1, "must be at least 1"),
          v.maxValue(WEEK, `must be at most ${WEEK} (7 days)`),
          v.description("the sandbox's lifetime from the resume (absent: what it had left at the pause)"),
        ),
      ),
    },
    "must be a JSON object with at most a timeout and a waitTimeout",
  ),
  { waitTimeout: RESUME_WAIT_SECONDS },
);
export type ResumeRequest = v.InferOutput<typeof ResumeRequest>;

/**
 * PauseRequest is the native `POST /v1/sandboxes/{id}/pause` body, optional: `waitTimeout`, how
 * long the call waits for the node's agent to commit (default 120 s). A commit not done by then
 * is abandoned, not completed later: the answer is final and the sandbox keeps running.
 */
export const PauseRequest = v.optional(
  v.strictObject(
    {
      waitTimeout: v.optional(
        v.pipe(
          v.number("must be a number of seconds"),
          v.integer("must be a whole number of seconds"),
          v.minValue(1, "must be at least 1"),
          v.maxValue(600, "must be at most 600"),
          v.description("seconds to wait for the commit (default 120); past them the pause is abandoned"),
        ),
      ),
    },
    "must be a JSON object with at most a waitTimeout",
  ),
  {},
);
export type PauseRequest = v.InferOutput<typeof PauseRequest>;
