import type { V1Pod } from "@kubernetes/client-node";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { isAlreadyExists, isConflict, isNotFound, orMissing } from "../../lib/kube/errors.ts";
import { abandonPause } from "../../lib/snapshots/abandoned-pause.ts";
import { carriedEvents } from "../../lib/snapshots/lifecycle-events.ts";
import { pausePlan, sourceState } from "../../lib/snapshots/pause-plan.ts";
import { isUnanswered, pauseWait, pauseWaitStep } from "../../lib/snapshots/pause-wait.ts";
import { pauseStart, phaseOf, snapshotObject } from "../../lib/snapshots/snapshot-state.ts";
import { findSandbox } from "../api/find-sandbox.ts";
import type { HostDeps } from "../host-deps.ts";
import { completePause } from "./complete-pause.ts";
import { findSnapshot } from "./find-paused.ts";
import { snapshotEvent } from "./snapshot-events.ts";
import { waitForSnapshot } from "./wait-snapshot.ts";

/** PauseOutcome is a pause's answer: the paused sandbox's snapshot, or why it is not paused. */
export type PauseOutcome =
  | { ok: true; snapshot: SandboxSnapshot }
  | {
      ok: false;
      reason: "not-found" | "paused" | "not-running" | "failed" | "timeout" | "not-configured";
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
 */
export async function pauseSandbox(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
  opts: { waitMs?: number } = {},
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
      const { message: _failure, pendingEvents: _carried, ...kept } = replaced.status ?? {};
      // The facts of the pause and resume before this one go now: any event of theirs the
      // history lacks is carried on the snapshot until the sweep writes it.
      const pendingEvents = carriedEvents(replaced, deps.now());
      await deps.kube.replaceSnapshotStatus(namespace, {
        ...replaced,
        status: {
          ...kept,
          phase: SNAPSHOT_PHASE.COMMITTING,
          ...(pendingEvents.length > 0 ? { pendingEvents } : {}),
        },
      });
    }
  } catch (e) {
    if (isConflict(e) || isAlreadyExists(e)) return "conflict";
    throw e;
  }
  return { ok: true };
}

/** abandoned is a pause's final answer once it was undone: the sandbox was not paused. */
function abandoned(id: string, why: string): PauseOutcome {
  return {
    ok: false,
    reason: "timeout",
    message: `sandbox ${id} was not paused: ${why}; the pause was abandoned and the sandbox keeps running`,
  };
}

/**
 * undone answers a pause that did not happen: "not-found" when its sandbox ended (a kill won),
 * else abandoned (the sandbox runs on, as the pod the pause recorded shows).
 */
async function undone(
  deps: HostDeps,
  namespace: string,
  id: string,
  s: SandboxSnapshot | undefined,
  why: string,
): Promise<PauseOutcome> {
  const source = s?.spec.source;
  const pod = source && (await orMissing(deps.kube.getPod(namespace, source.pod)));
  return source && sourceState(pod, id, source) !== "ended"
    ? abandoned(id, why)
    : { ok: false, reason: "not-found", message: `sandbox ${id} ended while it was being paused` };
}

/**
 * awaitCommit waits for the agent's commit of the pause it joined (this generation of the
 * snapshot) until the pause's deadline (spec.source.commitUntil) and acts on what it sees
 * (pauseWaitStep). A commit that failed, or that did not come by the deadline, is undone now by
 * the sweep's rule (abandonPause), so a 504 is final: the sandbox keeps running and the pause never
 * completes later (a commit after the deadline is abandoned too, committedLate). A pause another
 * step already undid, or a newer one replaced, is answered as such, never undone again.
 */
async function awaitCommit(deps: HostDeps, namespace: string, id: string): Promise<PauseOutcome> {
  const first = await orMissing(deps.kube.getSnapshot(namespace, id));
  const w = pauseWait(first, deps.now());
  const settled = (s: SandboxSnapshot | undefined) => !isUnanswered(s, w);
  for (let round = 0; round < 5; round++) {
    const wait = Math.max(1000, w.deadline - deps.now().getTime() + 500);
    const waited = await waitForSnapshot(deps, namespace, id, settled, wait);
    const s = waited === "timeout" ? await orMissing(deps.kube.getSnapshot(namespace, id)) : waited.snapshot;
    const step = pauseWaitStep(s, w, deps.now());
    if (step.kind === "undone") return undone(deps, namespace, id, first, step.why);
    if (step.kind === "abandoned") return abandoned(id, step.why);
    if (step.kind === "done") return { ok: true, snapshot: step.snapshot };
    if (step.kind === "failed") return failed(deps, step.snapshot, id, step.why);
    if (step.kind === "complete") {
      const done = await completePause(deps, step.snapshot);
      if (done.result === "ended") return undone(deps, namespace, id, step.snapshot, done.why);
      if (done.result === "paused") return { ok: true, snapshot: done.snapshot };
    }
    if (step.kind === "abandon" && (await abandonMine(deps, step.snapshot, step.why)))
      return abandoned(
        id,
        "the snapshot agent did not commit it by the pause's deadline (is it running on its node?)",
      );
  }
  return {
    ok: false,
    reason: "timeout",
    message: `sandbox ${id}'s pause kept changing while it was awaited; its state is in GET /v1/sandboxes/${id}`,
  };
}

/** failed answers a pause whose commit failed: an Event says why, and the pause is undone. */
async function failed(deps: HostDeps, s: SandboxSnapshot, id: string, why: string): Promise<PauseOutcome> {
  await snapshotEvent(
    deps,
    s,
    "Warning",
    "PauseFailed",
    `the pause failed; the sandbox keeps running: ${why}`,
  );
  await abandonMine(deps, s, "its pause failed").catch((e: unknown) =>
    deps.log.warn({ sandboxId: id, err: String(e) }, "a failed pause was left to the sweep"),
  );
  return { ok: false, reason: "failed", message: `pausing sandbox ${id} failed; it keeps running: ${why}` };
}

/**
 * abandonMine undoes this caller's pause by the sweep's rule (abandonPause, on a fresh read of its
 * pod), preconditioned on the snapshot as read: true when undone (or gone), false when the
 * snapshot changed meanwhile (the caller looks again). Any other error is thrown: the caller must
 * not answer "abandoned" for a write it does not know landed.
 */
async function abandonMine(deps: HostDeps, s: SandboxSnapshot, why: string): Promise<boolean> {
  const ns = s.metadata?.namespace ?? "";
  const pod = await orMissing(deps.kube.getPod(ns, s.spec.source.pod));
  const d = abandonPause(s, pod, why);
  try {
    if (d.kind === "delete")
      await deps.kube.deleteSnapshot(ns, s.metadata?.name ?? "", {
        resourceVersion: s.metadata?.resourceVersion ?? "",
      });
    else await deps.kube.replaceSnapshotStatus(ns, { ...s, status: d.status });
    deps.log.info({ sandboxId: s.spec.sandboxId }, `pause abandoned: ${d.why}`);
    return true;
  } catch (e) {
    if (isNotFound(e)) return true;
    if (isConflict(e)) return false;
    throw e;
  }
}
