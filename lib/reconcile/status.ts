import type { V1Pod } from "@kubernetes/client-node";
import type { SandboxPool } from "../api/sandbox-pool.ts";
import { phaseTransitionEvent } from "../pool/pool-events.ts";
import { computePoolStatus, statusChanged } from "../pool/pool-status.ts";
import type { Action } from "./action.ts";

/**
 * planStatus computes the pool's status from its pods and writes it only when it differs from
 * the stored one (so a pool at rest costs no writes), with an Event when the phase changes.
 */
export function planStatus(pool: SandboxPool, pods: readonly V1Pod[], now: Date): Action[] {
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
      write: { op: "status", status: next },
      ...(event ? { event } : {}),
    },
  ];
}
