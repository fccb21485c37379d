import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_PHASE, SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../../lib/api/keys.ts";
import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";
import { scaleDownPolicyFor } from "../../lib/pool/scale-plan.ts";
import { orderCandidates } from "../../lib/sandboxes/candidates.ts";
import { CreateStamps } from "./create-stamps.ts";
import type { ApiDeps } from "./deps.ts";

/**
 * recordDemand stamps the pool's last-sandbox-create-time for a create, through the host's
 * throttle (deps.stamps) when it has one, else checked against the stored stamp only.
 */
export function recordDemand(deps: ApiDeps, pool: SandboxPool, now: Date): void {
  (deps.stamps ?? new CreateStamps(deps)).stamp(pool, now);
}

/**
 * idleSelector selects the idle Pods of the given pools (one pool: an equality, more: a set).
 * Only idle ones: a Pod that turns idle enters the selection (ADDED) and its readiness follows
 * (MODIFIED), while the many writes of busy Pods never reach a waiter. With hundreds of creates
 * waiting at once, each watching, every event is sent to each of them, so this is what keeps a
 * wake under load from costing the apiserver waiters × events.
 */
function idleSelector(names: readonly string[]): string {
  const pools =
    names.length === 1
      ? `${SANDBOX_POOL_LABEL}=${names[0]}`
      : `${SANDBOX_POOL_LABEL} in (${names.join(",")})`;
  return `${pools},${SANDBOX_PHASE_LABEL}=${SANDBOX_PHASE.IDLE}`;
}

/**
 * waitForIdle watches the pods of the given pools, all in one namespace (no polling), until one
 * becomes claimable and `claim` wins it, or timeoutMs passes. An Env's create watches all of its
 * members, so a Pod that turns idle in any of them serves it. Nothing is queued anywhere: a waiter
 * that loses a race keeps watching, and one that times out leaves no trace.
 */
export async function waitForIdle<T>(
  deps: ApiDeps,
  pools: readonly SandboxPool[],
  timeoutMs: number,
  claim: (pod: V1Pod, pool: SandboxPool) => Promise<T | undefined>,
): Promise<T | undefined> {
  const namespace = pools[0]?.metadata?.namespace ?? "";
  const byName = new Map(pools.map((p) => [p.metadata?.name ?? "", p]));
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  let won: T | undefined;
  let busy = Promise.resolve();
  try {
    while (won === undefined && !controller.signal.aborted) {
      await deps
        .watch(
          {
            method: "GET",
            path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
            query: { labelSelector: idleSelector([...byName.keys()]) },
          },
          (event) => {
            if (event.type !== "ADDED" && event.type !== "MODIFIED") return false;
            const pod = event.object as V1Pod;
            const pool = byName.get(pod.metadata?.labels?.[SANDBOX_POOL_LABEL] ?? "");
            if (!pool) return false;
            const window = scaleDownPolicyFor(pool).protectionWindowSeconds;
            const [candidate] = orderCandidates([pod], deps.now(), window, deps.random);
            if (candidate) {
              // Claims run one after another, so a waiter never holds two pods.
              busy = busy.then(async () => {
                if (won !== undefined) return;
                won = await claim(candidate, pool);
                if (won !== undefined) controller.abort();
              });
            }
            return false;
          },
          controller.signal,
        )
        .catch((e: unknown) => {
          if (!controller.signal.aborted) throw e;
        });
      await busy;
    }
  } finally {
    clearTimeout(timer);
  }
  await busy;
  return won;
}
