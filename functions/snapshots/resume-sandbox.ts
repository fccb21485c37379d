import type { V1Pod } from "@kubernetes/client-node";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { tooManySandboxes } from "../../lib/claims/errors.ts";
import { type SandboxView, sandboxView } from "../../lib/claims/sandbox-view.ts";
import { limitFor } from "../../lib/claims/team-limits.ts";
import { SANDBOX_ID_LABEL, SANDBOX_POOL_LABEL, STOP_REASON } from "../../lib/crd/keys.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { networkOf } from "../../lib/egress/network.ts";
import { isConflict, isNotFound, orMissing } from "../../lib/kube/errors.ts";
import { phaseOf, resumeClaim, resumeStart } from "../../lib/snapshots/snapshot-state.ts";
import { rfc3339 } from "../../lib/util/time.ts";
import { claimFrom } from "../api/claim-from.ts";
import { findSandbox } from "../api/find-sandbox.ts";
import { recordDemand, waitForIdle } from "../api/wait-for-idle.ts";
import { waitForRunning } from "../api/wait-running.ts";
import { fenceFirst } from "../egress/fence-first.ts";
import type { HostDeps } from "../host-deps.ts";
import { releaseSandbox } from "../release-sandbox.ts";
import { completePause } from "./complete-pause.ts";
import { findSnapshot } from "./find-paused.ts";
import { markResumed } from "./mark-resumed.ts";
import { resumeClaimer } from "./resume-claim.ts";
import { waitForSnapshot } from "./wait-snapshot.ts";

/** ResumeOutcome is a resume's answer: the sandbox (running, or starting when not waited for), or why not. */
export type ResumeOutcome =
  | { ok: true; sandbox: SandboxView; pod: V1Pod; resumed: boolean }
  | {
      ok: false;
      reason:
        | "not-found"
        | "running"
        | "exhausted"
        | "limited"
        | "pool-gone"
        | "pausing"
        | "conflict"
        | "failed";
      message: string;
    };

/** RESUME_CLAIM_MS bounds a resume's claim, including its wait for an idle pod of the pool. */
const RESUME_CLAIM_MS = 30_000;

/**
 * resumeSandbox brings the tenant's paused sandbox back (ADR 0045): its snapshot goes Paused →
 * Resuming (preconditioned, so of two resumes one claims and the other waits for it), an idle pod
 * of its pool is claimed by the ordinary in-place claim with the snapshot images, the same id and
 * the first claim's owner, metadata, network and sealed env vars (envd gets them with a new token:
 * the incarnation), the snapshot goes Resuming → Resumed, and with waitSeconds the call waits for
 * Running. A resume that finds no idle pod, or whose snapshot changed under it (killed), undoes
 * its claim and answers why; a resume whose host died is taken over once its time is up.
 */
export async function resumeSandbox(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
  opts: { timeoutSeconds?: number; waitSeconds?: number } = {},
): Promise<ResumeOutcome> {
  // The wait for Running counts from the call's start: a claim that waited for an idle pod leaves
  // less of it, so the call's whole time stays within waitSeconds (E2B: the SDK's request timeout).
  const waitUntil = opts.waitSeconds ? deps.now().getTime() + opts.waitSeconds * 1000 : undefined;
  for (let attempt = 0; attempt < 5; attempt++) {
    const s = await findSnapshot(deps, tenant, id);
    if (!s) {
      const pod = await findSandbox(deps, tenant, id);
      return pod
        ? { ok: false, reason: "running", message: `sandbox ${id} is running` }
        : { ok: false, reason: "not-found", message: `no sandbox ${id}` };
    }
    const namespace = s.metadata?.namespace ?? "";
    // A resume past its time may have claimed its pod before its host died: its pods decide.
    const carriers =
      phaseOf(s) === SNAPSHOT_PHASE.RESUMING
        ? (await deps.kube.listPods(namespace, `${SANDBOX_ID_LABEL}=${id}`)).items
        : [];
    // A Paused one's pod may not be released yet (its pauser died between the two writes).
    const source =
      phaseOf(s) === SNAPSHOT_PHASE.PAUSED
        ? await orMissing(deps.kube.getPod(namespace, s.spec.source.pod))
        : undefined;
    const start = resumeStart(s, deps.now(), carriers, source);
    if (start.kind === "finish-pause") {
      await completePause(deps, s);
      continue;
    }
    if (start.kind === "refuse") return { ok: false, reason: start.reason, message: start.message };
    if (start.kind === "running") return runningOne(deps, tenant, id, waitUntil);
    if (start.kind === "adopt") {
      if (await markResumed(deps, s, s.status?.resume?.attempt ?? "", start.pod))
        return runningOne(deps, tenant, id, waitUntil);
      continue;
    }
    if (start.kind === "wait") {
      const until = Date.parse(s.status?.resume?.until ?? "") - deps.now().getTime();
      const waited = await waitForSnapshot(
        deps,
        namespace,
        id,
        (x) => !x || phaseOf(x) !== SNAPSHOT_PHASE.RESUMING,
        // The other resume's time, within this call's own wait.
        Math.max(
          1000,
          Math.min(until + 1000, (waitUntil ?? Number.POSITIVE_INFINITY) - deps.now().getTime()),
        ),
      );
      if (waited !== "timeout" && waited.snapshot && phaseOf(waited.snapshot) === SNAPSHOT_PHASE.RESUMED)
        return runningOne(deps, tenant, id, waitUntil);
      continue;
    }
    const attemptId = crypto.randomUUID();
    let resuming: SandboxSnapshot;
    try {
      resuming = await deps.kube.replaceSnapshotStatus(namespace, {
        ...s,
        status: {
          ...s.status,
          phase: SNAPSHOT_PHASE.RESUMING,
          resume: {
            attempt: attemptId,
            until: rfc3339(new Date(deps.now().getTime() + RESUME_CLAIM_MS + 15_000)),
          },
        },
      });
    } catch (e) {
      if (isConflict(e) || isNotFound(e)) continue;
      throw e;
    }
    return await claimForResume(deps, resuming, attemptId, { ...opts, waitUntil });
  }
  return { ok: false, reason: "conflict", message: `sandbox ${id} kept changing while it was being resumed` };
}

/** runningOne answers a resume of a sandbox that already runs (another resume won): its view. */
async function runningOne(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
  waitUntil: number | undefined,
): Promise<ResumeOutcome> {
  const pod = await findSandbox(deps, tenant, id, true);
  if (!pod) return { ok: false, reason: "not-found", message: `no sandbox ${id}` };
  return answer(deps, pod, waitUntil, false);
}

/** answer waits for Running until waitUntil (at least a second) when asked, and gives the sandbox's view. */
async function answer(
  deps: HostDeps,
  claimed: V1Pod,
  waitUntil: number | undefined,
  resumed: boolean,
  pool?: SandboxPool,
): Promise<ResumeOutcome> {
  let pod = claimed;
  if (waitUntil !== undefined) {
    const p =
      pool ??
      (await deps.kube.getPool(
        pod.metadata?.namespace ?? "",
        pod.metadata?.labels?.[SANDBOX_POOL_LABEL] ?? "",
      ));
    const waited = await waitForRunning(deps, pod, p, Math.max(1000, waitUntil - deps.now().getTime()));
    if (!waited.ok)
      return {
        ok: false,
        reason: "failed",
        message: `the resumed sandbox did not become running (${waited.reason})`,
      };
    pod = waited.pod;
  }
  const view = sandboxView(pod, deps.now());
  if (!view)
    return { ok: false, reason: "failed", message: "the resumed sandbox's pod is no longer its own" };
  return { ok: true, sandbox: view, pod, resumed };
}

/** claimForResume claims a pod for a Resuming snapshot and makes it Resumed, or undoes both. */
async function claimForResume(
  deps: HostDeps,
  s: SandboxSnapshot,
  attemptId: string,
  opts: { timeoutSeconds?: number; waitSeconds?: number; waitUntil?: number },
): Promise<ResumeOutcome> {
  const namespace = s.metadata?.namespace ?? "";
  const id = s.spec.sandboxId;
  const backToPaused = async (why: string) => {
    const fresh = await orMissing(deps.kube.getSnapshot(namespace, id));
    if (!fresh || fresh.status?.resume?.attempt !== attemptId || phaseOf(fresh) !== SNAPSHOT_PHASE.RESUMING)
      return;
    const { resume: _dropped, ...rest } = fresh.status ?? {};
    await deps.kube
      .replaceSnapshotStatus(namespace, { ...fresh, status: { ...rest, phase: SNAPSHOT_PHASE.PAUSED } })
      .catch((e: unknown) =>
        deps.log.warn({ sandboxId: id, err: String(e) }, `resume undo (${why}) left to the sweep`),
      );
  };
  const pool = await orMissing(deps.kube.getPool(namespace, s.spec.pool));
  if (!pool) {
    await backToPaused("pool gone");
    return {
      ok: false,
      reason: "pool-gone",
      message: `sandbox ${id}'s pool ${namespace}/${s.spec.pool} is gone`,
    };
  }
  const claim = resumeClaim(s, attemptId, opts.timeoutSeconds);
  const fence = await fenceFirst(
    deps,
    [pool],
    id,
    networkOf({ metadata: { annotations: claim.marks.annotations } }),
  );
  if (!fence.ok) {
    await backToPaused("egress");
    return { ok: false, reason: "failed", message: fence.message };
  }
  const { claimIn, limited } = resumeClaimer(deps, pool, id, claim, opts.waitSeconds);
  const deadline = Math.min(
    deps.now().getTime() + RESUME_CLAIM_MS,
    opts.waitUntil ?? Number.POSITIVE_INFINITY,
  );
  recordDemand(deps, pool, deps.now());
  let pod = (await claimFrom(deps, pool, claimIn, deadline)).pod;
  if (!pod && !deps.stopping.aborted && limited() === undefined) {
    const won = await waitForIdle(
      deps,
      [pool],
      Math.max(0, deadline - deps.now().getTime()),
      async (candidate) => claimIn(candidate),
    );
    pod = won ?? undefined;
  }
  if (!pod) {
    await fence.undo();
    await backToPaused("no idle pod");
    const held = limited();
    if (held !== undefined)
      return {
        ok: false,
        reason: "limited",
        message: tooManySandboxes(claim.team, held, limitFor(deps.teamLimits, claim.team) ?? held).body.error
          .message,
      };
    return {
      ok: false,
      reason: "exhausted",
      message: `no idle pod in pool ${namespace}/${s.spec.pool} to resume ${id} on`,
    };
  }
  if (!(await markResumed(deps, s, attemptId, pod.metadata?.name ?? ""))) {
    // The snapshot is no longer this resume's (a kill deleted it, or a sweep gave it to another
    // resume): this pod is not the sandbox's; give it back.
    // Stop reason Paused: the pod was never the sandbox (no terminal record, its snapshot untouched).
    await releaseSandbox(deps, pool, pod, { stopReason: STOP_REASON.PAUSED }).catch((err: unknown) =>
      deps.log.warn({ sandboxId: id, err: String(err) }, "a lost resume's pod was not released"),
    );
    return {
      ok: false,
      reason: "conflict",
      message: `sandbox ${id} changed while it was being resumed (killed?)`,
    };
  }
  return answer(deps, pod, opts.waitUntil, true, pool);
}
