import type { V1Pod } from "@kubernetes/client-node";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { isAlreadyExists, isConflict, isNotFound, orMissing } from "../../lib/kube/errors.ts";
import { pausePlan } from "../../lib/snapshots/pause-plan.ts";
import {
  isCommitted,
  isFailed,
  pauseStart,
  phaseOf,
  snapshotObject,
} from "../../lib/snapshots/snapshot-state.ts";
import { snapshotSweep } from "../../lib/snapshots/snapshot-sweep.ts";
import { findSandbox } from "../api/find-sandbox.ts";
import type { HostDeps } from "../host-deps.ts";
import { completePause } from "./complete-pause.ts";
import { findSnapshot } from "./find-paused.ts";
import { snapshotEvent } from "./snapshot-events.ts";
import { applySweep } from "./sweep-snapshots.ts";
import { waitForSnapshot } from "./wait-snapshot.ts";

/** PauseOutcome is a pause's answer: the paused sandbox's snapshot, or why it is not paused. */
export type PauseOutcome =
  | { ok: true; snapshot: SandboxSnapshot }
  | {
      ok: false;
      reason: "not-found" | "paused" | "not-running" | "failed" | "timeout" | "not-configured";
      message: string;
    };

/** PAUSE_WAIT_MS bounds how long a pause call waits for its node's agent to commit. */
const PAUSE_WAIT_MS = 120_000;

/**
 * pauseSandbox pauses the tenant's running sandbox (ADR 0045): it records the sandbox in its
 * SandboxSnapshot (phase Committing: created, or replaced by a new generation for a sandbox that
 * paused before), waits for the snapshot agent on the pod's node to commit the containers' files
 * to the registry, then completes the pause (completePause: Paused, the pod back to its pool). A
 * commit that fails leaves the sandbox running and answers why (the registry was down, the
 * container restarted). Concurrent and repeated pauses of one sandbox join the same commit; a
 * pause racing a kill loses to it (nothing is paused, the snapshot goes).
 */
export async function pauseSandbox(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
  opts: { waitMs?: number } = {},
): Promise<PauseOutcome> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const pod = await findSandbox(deps, tenant, id, attempt > 0);
    const begun = pod ? await beginPause(deps, pod) : undefined;
    if (begun === "conflict") continue;
    if (!pod || !begun?.ok) {
      // No pod, or one that is not running: a paused sandbox's pod may still be on its way back
      // to the pool (stopping), so the snapshot says what the sandbox is.
      const s = await findSnapshot(deps, tenant, id);
      const phase = s && phaseOf(s);
      if (s && phase === SNAPSHOT_PHASE.PAUSED) {
        // Paused but its pod still running it (its pauser died between the two writes): finish.
        if (pod) await completePause(deps, s);
        return { ok: false, reason: "paused", message: `sandbox ${id} is already paused` };
      }
      if (phase === SNAPSHOT_PHASE.RESUMING)
        return { ok: false, reason: "not-running", message: `sandbox ${id} is resuming` };
      if (begun && !begun.ok) return begun;
      return { ok: false, reason: "not-found", message: `no sandbox ${id}` };
    }
    const namespace = pod.metadata?.namespace ?? "";
    return await awaitCommit(deps, namespace, id, opts.waitMs ?? PAUSE_WAIT_MS);
  }
  return { ok: false, reason: "timeout", message: `sandbox ${id} kept changing while it was being paused` };
}

/**
 * beginPause records a running sandbox's pause in its snapshot (Committing: created, or a new
 * generation over a resumed or failed one), or joins the pause already committing this pod;
 * "conflict" when the snapshot changed meanwhile (decide again). Used by pauseSandbox and by the
 * auto-pause of a sandbox at the end of its lifetime.
 */
export async function beginPause(
  deps: HostDeps,
  pod: V1Pod,
): Promise<{ ok: true } | Extract<PauseOutcome, { ok: false }> | "conflict"> {
  const plan = pausePlan(pod, deps.now(), deps.snapshotRetentionSeconds);
  if (!plan.ok) return { ok: false, reason: "not-running", message: plan.message };
  const namespace = pod.metadata?.namespace ?? "";
  const existing = await orMissing(deps.kube.getSnapshot(namespace, plan.sandboxId));
  const start = pauseStart(existing, plan);
  if (start.kind === "refuse") return { ok: false, reason: start.reason, message: start.message };
  try {
    if (start.kind === "create") await deps.kube.createSnapshot(namespace, snapshotObject(namespace, plan));
    if (start.kind === "replace" && existing) {
      const replaced = await deps.kube.replaceSnapshot(namespace, snapshotObject(namespace, plan, existing));
      const { message: _failure, ...kept } = replaced.status ?? {};
      await deps.kube.replaceSnapshotStatus(namespace, {
        ...replaced,
        status: { ...kept, phase: SNAPSHOT_PHASE.COMMITTING },
      });
    }
  } catch (e) {
    if (isConflict(e) || isAlreadyExists(e)) return "conflict";
    throw e;
  }
  return { ok: true };
}

/** awaitCommit waits for the agent's commit and finishes the pause, or says why it did not. */
async function awaitCommit(
  deps: HostDeps,
  namespace: string,
  id: string,
  waitMs: number,
): Promise<PauseOutcome> {
  const waited = await waitForSnapshot(
    deps,
    namespace,
    id,
    (s) => !s || isCommitted(s) || isFailed(s) || phaseOf(s) === SNAPSHOT_PHASE.PAUSED,
    waitMs,
  );
  if (waited === "timeout")
    return {
      ok: false,
      reason: "timeout",
      message: `the snapshot agent did not commit sandbox ${id} within ${Math.round(waitMs / 1000)} s (is it running on the sandbox's node?); the pause may still complete`,
    };
  const s = waited.snapshot;
  if (!s) return { ok: false, reason: "not-found", message: `sandbox ${id} ended while it was being paused` };
  if (isFailed(s)) {
    await snapshotEvent(
      deps,
      s,
      "Warning",
      "PauseFailed",
      `the pause failed; the sandbox keeps running: ${s.status?.message ?? ""}`,
    );
    await abandonFailed(deps, s);
    return {
      ok: false,
      reason: "failed",
      message: `pausing sandbox ${id} failed; it keeps running: ${s.status?.message ?? "no reason given"}`,
    };
  }
  const done = await completePause(deps, s);
  if (done.result === "ended")
    return { ok: false, reason: "not-found", message: `sandbox ${id}: ${done.why}` };
  return { ok: true, snapshot: done.snapshot };
}

/**
 * abandonFailed undoes a failed pause's record: a sandbox never resumed had no snapshot before, so
 * the object goes; a resumed one's snapshot goes back to Resumed (its images are what it runs).
 */
async function abandonFailed(deps: HostDeps, s: SandboxSnapshot): Promise<void> {
  // The sweep's own rule for a failed pause (snapshotSweep), made now rather than at the next tick.
  await applySweep(deps, s, snapshotSweep(s, [], undefined, deps.now())).catch((e: unknown) => {
    if (isConflict(e) || isNotFound(e)) return;
    deps.log.warn(
      { sandboxId: s.spec.sandboxId, err: String(e) },
      "a failed pause's snapshot was not cleared",
    );
  });
}
