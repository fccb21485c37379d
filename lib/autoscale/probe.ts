// Would the cluster take more of a pool's Pods? Upstream asks admission plugins before it grows a
// pool; here the cluster has already answered for the Pods the pool asked for: Pods the scheduler
// cannot place, and Pod creates the apiserver refused (the pool's ReplicaFailure condition).
import type { V1Pod } from "@kubernetes/client-node";
import type { PoolScaleUpAttemptResult } from "../crd/autoscaling.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { REPLICA_FAILURE_REASON } from "../pool/creation-block.ts";
import { REPLICA_FAILURE } from "../pool/pool-status.ts";

/** ProbeResult is a scale-up probe's answer, with a one-line message unless it is Enough. */
export type ProbeResult =
  | { result: "Enough" }
  | { result: Exclude<PoolScaleUpAttemptResult, "Enough">; message: string };

/** QUOTA_REFUSAL matches the apiserver's answer to a Pod create beyond a ResourceQuota. */
const QUOTA_REFUSAL = /exceeded quota|forbidden:.*quota/i;

/** unschedulable is the PodScheduled=False/Unschedulable condition of a Pending Pod, if any. */
function unschedulable(pod: V1Pod) {
  if (pod.metadata?.deletionTimestamp || pod.status?.phase !== "Pending") return undefined;
  return pod.status?.conditions?.find(
    (c) => c.type === "PodScheduled" && c.status === "False" && c.reason === "Unschedulable",
  );
}

function oneLine(text: string, max = 240): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * probe answers for one pool: Insufficient when some of its Pods are Pending as Unschedulable, or
 * when its last Pod create was refused for quota; Failed when Pods cannot be created for any other
 * reason (another refusal, a missing template, a pod template that cannot render); else Enough
 * (a template copy still being written included).
 */
export function probe(pool: SandboxPool, pods: readonly V1Pod[]): ProbeResult {
  const stuck = pods.flatMap((pod) => {
    const c = unschedulable(pod);
    return c ? [c] : [];
  });
  if (stuck.length > 0)
    return {
      result: "Insufficient",
      message: oneLine(`${stuck.length} pod(s) Pending as Unschedulable: ${stuck[0]?.message ?? ""}`),
    };
  const failure = pool.status?.conditions?.find((c) => c.type === REPLICA_FAILURE && c.status === "True");
  // A template copy in progress is a moment's wait, not a refusal.
  if (!failure || failure.reason === REPLICA_FAILURE_REASON.TEMPLATE_NOT_COPIED) return { result: "Enough" };
  const message = failure.message ?? failure.reason ?? "";
  if (failure.reason === REPLICA_FAILURE_REASON.FAILED_CREATE && QUOTA_REFUSAL.test(message))
    return { result: "Insufficient", message: oneLine(`pod create refused for quota: ${message}`) };
  return { result: "Failed", message: oneLine(`${failure.reason}: ${message}`) };
}
