import type { V1Pod } from "@kubernetes/client-node";
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool, SandboxPoolStatus } from "../crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import { type Action, poolTarget } from "../kube/action.ts";
import { escapePointer } from "../kube/json-patch.ts";
import { type CreateResults, creationBlock, replicaFailure } from "../pool/creation-block.ts";
import { staleMarks } from "../pool/pending-requests.ts";
import { podFacts } from "../pool/pod-facts.ts";
import {
  type PoolEventIntent,
  phaseTransitionEvent,
  type RolloutAnnouncement,
  rolloutAnnouncement,
} from "../pool/pool-events.ts";
import {
  computePoolStatus,
  type PoolStatusContext,
  REPLICA_FAILURE,
  statusChanged,
  templateAvailability,
} from "../pool/pool-status.ts";
import { maxSurgeOf } from "../pool/rollout.ts";
import { idleSinceOf, scaleDownPolicyFor, scaleDownWait } from "../pool/scale-plan.ts";

/** StatusInputs are what a run knows besides the pool and its pods. */
export interface StatusInputs {
  /** template, when the snapshot read it (the pool names one); null: it does not exist. */
  template?: SandboxTemplate | null | undefined;
  env?: SandboxEnv | undefined;
  /** creates are this run's Pod creates (materialise-pool's outcomes). */
  creates?: CreateResults;
  /**
   * templateCopied: this run wrote the pool's template copy, so the snapshot's "copy needed" is
   * already stale; pods follow on the next run and the stored condition stays until then.
   */
  templateCopied?: boolean;
}

/**
 * statusContext is what the status says beyond the counts: why Pods are not created
 * (ReplicaFailure), whether the pool's template exists (TemplateAvailable) and what a scale-down
 * waits for.
 */
export function statusContext(
  pool: SandboxPool,
  pods: readonly V1Pod[],
  now: Date,
  inputs: StatusInputs,
): PoolStatusContext {
  const live = pods.filter((p) => !podFacts(p).terminating).length;
  const failure = replicaFailure(
    inputs.templateCopied ? undefined : creationBlock(pool, inputs.template),
    inputs.creates ?? { created: 0 },
    pool.spec.replicas - live,
  );
  const wait = scaleDownWait(pool, pods, now, scaleDownPolicyFor(pool, inputs.env), idleSinceOf);
  const templateAvailable = templateAvailability(pool, inputs.template);
  return {
    ...(failure !== undefined ? { replicaFailure: failure } : {}),
    ...(templateAvailable !== undefined ? { templateAvailable } : {}),
    ...(wait ? { scaleDownWait: wait } : {}),
  };
}

/**
 * planStatus computes the pool's status from its pods and writes it only when it differs from
 * the stored one (so a pool at rest costs no writes), with an Event when Pods cannot be created
 * (a Warning, whenever the reason or message changes) or else when the phase changes. A rollout
 * that starts or ends is announced with the write (RolloutStarted, RolloutCompleted; see
 * announcingWrite).
 */
export function planStatus(
  pool: SandboxPool,
  pods: readonly V1Pod[],
  now: Date,
  inputs: StatusInputs = {},
): Action[] {
  return [
    ...planStatusWrite(pool, pods, now, statusContext(pool, pods, now, inputs)),
    ...planStaleMarks(pool, now),
  ];
}

/** failureEvent is the Warning for a new or changed ReplicaFailure condition. */
function failureEvent(
  previous: SandboxPoolStatus | undefined,
  next: SandboxPoolStatus,
): PoolEventIntent | undefined {
  const find = (s: SandboxPoolStatus | undefined) => s?.conditions?.find((c) => c.type === REPLICA_FAILURE);
  const [before, after] = [find(previous), find(next)];
  if (!after || (before?.reason === after.reason && before.message === after.message)) return undefined;
  return { type: "Warning", reason: after.reason, action: "CreatePods", note: after.message };
}

/**
 * planStaleMarks removes the pending-requests marks no host rewrote for FRESH_SECONDS (a host
 * that crashed or went away), each tested for the value seen, so a mark rewritten meanwhile stays.
 */
function planStaleMarks(pool: SandboxPool, now: Date): Action[] {
  const stale = staleMarks(pool, now);
  if (stale.length === 0) return [];
  const annotations = pool.metadata?.annotations ?? {};
  return [
    {
      target: poolTarget(pool),
      why: `remove ${stale.length} stale pending-requests mark(s)`,
      write: {
        op: "patch",
        patch: stale.flatMap((key) => {
          const path = `/metadata/annotations/${escapePointer(key)}`;
          return [
            { op: "test" as const, path, value: annotations[key] },
            { op: "remove" as const, path },
          ];
        }),
      },
    },
  ];
}

function planStatusWrite(
  pool: SandboxPool,
  pods: readonly V1Pod[],
  now: Date,
  context: PoolStatusContext,
): Action[] {
  const next = computePoolStatus(pool, pods, now, context);
  const announcement = rolloutAnnouncement(pool.status, next, {
    replicas: pool.spec.replicas,
    maxSurge: maxSurgeOf(pool),
  });
  if (!announcement && !statusChanged(pool.status, next)) return [];
  const event =
    failureEvent(pool.status, next) ??
    phaseTransitionEvent(pool.status?.phase, next.phase, {
      replicas: pool.spec.replicas,
      status: next,
    });
  // Without the field this step does not own (autoscaling), so the write never turns back a value
  // its writer set after our read. pendingRequests is ours: summed from the hosts' published
  // counts (lib/pool/pending-requests.ts).
  const { autoscaling: _a, ...own } = next;
  const events = [announcement?.event, event].filter((e): e is PoolEventIntent => e !== undefined);
  return [
    {
      target: poolTarget(pool),
      why: `status: ${next.phase} (idle ${next.idleReplicas}, running ${next.runningReplicas}, starting ${next.startingReplicas}, stopping ${next.stoppingReplicas}, failed ${next.failedReplicas})${announcement ? `; ${announcement.event.reason}` : ""}`,
      write: announcement ? announcingWrite(own, announcement) : { op: "status", status: own },
      ...(events[0] ? { event: events[0] } : {}),
      ...(events.length > 1 ? { events: events.slice(1) } : {}),
    },
  ];
}

/**
 * announcingWrite is the status write of a run that announces a rollout's start or end: one JSON
 * patch that tests the stored fields the announcement is keyed on, then sets every field of the
 * status as the merge patch would. Of the hosts that see the same start or end, only one write
 * passes its test, so one Event; the others re-read and find it announced.
 */
function announcingWrite(status: SandboxPoolStatus, announcement: RolloutAnnouncement): Action["write"] {
  const tests = Object.entries(announcement.tested).map(([key, value]) => ({
    op: "test" as const,
    path: `/status/${key}`,
    value,
  }));
  const sets = Object.entries(status).map(([key, value]) => ({
    op: "add" as const,
    path: `/status/${key}`,
    value,
  }));
  return { op: "patch-status", patch: [...tests, ...sets] };
}
