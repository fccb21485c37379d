import type { V1Pod } from "@kubernetes/client-node";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { HistoryUnavailable } from "../../lib/history/store.ts";
import { isAlreadyExists, isConflict, isNotFound, orMissing } from "../../lib/kube/errors.ts";
import { COMMIT_WAIT_MS, pausePlan } from "../../lib/snapshots/pause-plan.ts";
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
      reason:
        | "not-found"
        | "paused"
        | "not-running"
        | "failed"
        | "timeout"
        | "not-configured"
        | "unavailable";
      message: string;
    };

/**
 * pauseSandbox pauses the tenant's running sandbox (ADR 0045): it records the sandbox in its
 * SandboxSnapshot (phase Committing: created, or replaced by a new generation for a sandbox that
 * paused before), waits for the snapshot agent on the pod's node to commit the containers' files
 * to the registry, then completes the pause (completePause: Paused, the pod back to its pool). A
 * commit that fails leaves the sandbox running and answers why (the registry was down, the
 * container restarted). Concurrent and repeated pauses of one sandbox join the same commit; a
 * pause racing a kill loses to it (nothing is paused, the snapshot goes).
 *
 * A history database that cannot record the pause (its event is written before the pod is
 * released) answers "unavailable": the sandbox is paused, and the tick's sweep releases its pod
 * once the event is written.
 */
export async function pauseSandbox(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
  opts: { waitMs?: number } = {},
): Promise<PauseOutcome> {
  return pauseAttempts(deps, tenant, id, opts).catch((e: unknown) => {
    if (!(e instanceof HistoryUnavailable)) throw e;
    return {
      ok: false,
      reason: "unavailable",
      message: `sandbox ${id} is paused, but the history database cannot record it now; its pod goes back to the pool once it can`,
    };
  });
}

/** pauseAttempts is pauseSandbox's work, tried again while the snapshot changes under it. */
async function pauseAttempts(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
  opts: { waitMs?: number },
): Promise<PauseOutcome> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const pod = await findSandbox(deps, tenant, id, attempt > 0);
    const begun = pod ? await beginPause(deps, pod, opts.waitMs) : undefined;
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
    return await awaitCommit(deps, namespace, id);
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
  commitWaitMs?: number,
): Promise<{ ok: true } | Extract<PauseOutcome, { ok: false }> | "conflict"> {
  const plan = pausePlan(pod, deps.now(), deps.snapshotRetentionSeconds, commitWaitMs);
  if (!plan.ok) return { ok: false, reason: "not-running", message: plan.message };
  const namespace = pod.metadata?.namespace ?? "";
  const existing = await orMissing(deps.kube.getSnapshot(namespace, plan.sandboxId));
  const start = pauseStart(existing, plan, deps.now());
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

/**
 * awaitCommit waits for the agent's commit until the pause's deadline (spec.source.commitUntil,
 * the pause that joined another keeps that one's) and finishes the pause, or says why it did not:
 * a commit that failed, or that did not come by the deadline, is undone now (the sweep's own rule,
 * abandonPause), so the caller's answer is final: the sandbox keeps running.
 */
async function awaitCommit(deps: HostDeps, namespace: string, id: string): Promise<PauseOutcome> {
  const first = await orMissing(deps.kube.getSnapshot(namespace, id));
  const until = Date.parse(String(first?.spec.source.commitUntil ?? ""));
  const waitMs = Number.isFinite(until) ? until - deps.now().getTime() + 500 : COMMIT_WAIT_MS;
  const waited = await waitForSnapshot(
    deps,
    namespace,
    id,
    (s) => !s || isCommitted(s) || isFailed(s) || phaseOf(s) === SNAPSHOT_PHASE.PAUSED,
    Math.max(1000, waitMs),
  );
  if (waited === "timeout") {
    const s = await orMissing(deps.kube.getSnapshot(namespace, id));
    if (s && !isCommitted(s) && !isFailed(s) && (await abandon(deps, s)))
      return {
        ok: false,
        reason: "timeout",
        message: `the snapshot agent did not commit sandbox ${id} by the pause's deadline (is it running on the sandbox's node?); the pause was abandoned and the sandbox keeps running`,
      };
    return awaitCommit(deps, namespace, id);
  }
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
    await abandon(deps, s);
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
 * abandon undoes a pause that failed or ran past its deadline by the sweep's own rule
 * (snapshotSweep on a fresh read of the pod), made now rather than at the next tick; true when
 * the pause is undone or already gone, false when the snapshot moved on meanwhile (committed: the
 * caller looks again).
 */
async function abandon(deps: HostDeps, s: SandboxSnapshot): Promise<boolean> {
  const ns = s.metadata?.namespace ?? "";
  const pod = await orMissing(deps.kube.getPod(ns, s.spec.source.pod));
  const decision = snapshotSweep(s, [], pod, deps.now());
  if (decision.kind !== "delete" && decision.kind !== "back-to-resumed") return false;
  return applySweep(deps, s, decision).then(
    () => true,
    async (e: unknown) => {
      if (isNotFound(e)) return true;
      if (isConflict(e)) return false;
      deps.log.warn(
        { sandboxId: s.spec.sandboxId, err: String(e) },
        "an abandoned pause was left to the sweep",
      );
      return true;
    },
  );
}
