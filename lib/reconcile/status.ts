import type { V1Pod } from "@kubernetes/client-node";
import type { SandboxPool, SandboxPoolStatus } from "../api/sandbox-pool.ts";
import { escapePointer } from "../kube/json-patch.ts";
import { staleMarks } from "../pool/pending-requests.ts";
import { phaseTransitionEvent } from "../pool/pool-events.ts";
import { computePoolStatus, statusChanged } from "../pool/pool-status.ts";
import type { Action } from "./action.ts";

/**
 * planStatus computes the pool's status from its pods and writes it only when it differs from
 * the stored one (so a pool at rest costs no writes), with an Event when the phase changes.
 */
export function planStatus(pool: SandboxPool, pods: readonly V1Pod[], now: Date): Action[] {
  return [...planStatusWrite(pool, pods, now), ...planStaleMarks(pool, now)];
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
      target: {
        kind: "SandboxPool",
        namespace: pool.metadata?.namespace ?? "",
        name: pool.metadata?.name ?? "",
      },
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

function planStatusWrite(pool: SandboxPool, pods: readonly V1Pod[], now: Date): Action[] {
  const next = computePoolStatus(pool, pods, now);
  if (!statusChanged(pool.status, next)) return [];
  const event = phaseTransitionEvent(pool.status?.phase, next.phase, {
    replicas: pool.spec.replicas,
    status: next,
  });
  return [
    {
      target: {
        kind: "SandboxPool",
        namespace: pool.metadata?.namespace ?? "",
        name: pool.metadata?.name ?? "",
      },
      why: `status: ${next.phase} (idle ${next.idleReplicas}, running ${next.runningReplicas}, starting ${next.startingReplicas}, stopping ${next.stoppingReplicas}, failed ${next.failedReplicas})`,
      // A merge patch without the field this step does not own (autoscaling), so it never turns
      // back a value its writer set after our read. pendingRequests is ours: summed from the hosts'
      // published counts (lib/pool/pending-requests.ts).
      write: { op: "status", status: withoutForeignFields(next) },
      ...(event ? { event } : {}),
    },
  ];
}

function withoutForeignFields(status: SandboxPoolStatus): SandboxPoolStatus {
  const { autoscaling: _a, ...own } = status;
  return own;
}
