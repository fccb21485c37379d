import type { V1Pod } from "@kubernetes/client-node";
import { LAST_SANDBOX_CREATE_TIME_ANNOTATION, SANDBOX_POOL_LABEL } from "../../lib/api/keys.ts";
import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";
import { scaleDownPolicyFor } from "../../lib/pool/scale-plan.ts";
import { orderCandidates } from "../../lib/sandboxes/candidates.ts";
import { demandWorthRecording } from "../../lib/sandboxes/demand.ts";
import { rfc3339 } from "../../lib/util/time.ts";
import type { ApiDeps } from "./deps.ts";

/**
 * recordDemand stamps the pool's last-sandbox-create-time annotation, which the autoscaler reads
 * as "someone wanted a sandbox here": throttled (at most one write per pool every few seconds)
 * and best effort, since a lost stamp only delays a proactive scale-up.
 */
export async function recordDemand(deps: ApiDeps, pool: SandboxPool, now: Date): Promise<void> {
  if (!demandWorthRecording(pool.metadata?.annotations?.[LAST_SANDBOX_CREATE_TIME_ANNOTATION], now)) return;
  await deps.kube
    .setPoolAnnotations(pool.metadata?.namespace ?? "", pool.metadata?.name ?? "", {
      [LAST_SANDBOX_CREATE_TIME_ANNOTATION]: rfc3339(now),
    })
    .catch((e: unknown) =>
      deps.log.warn({ pool: pool.metadata?.name, err: String(e) }, "demand not recorded"),
    );
}

/**
 * waitForIdle watches the pool's pods (no polling) until one becomes claimable and `claim` wins
 * it, or timeoutMs passes. Nothing is queued anywhere: a waiter that loses a race keeps watching,
 * and one that times out leaves no trace.
 */
export async function waitForIdle<T>(
  deps: ApiDeps,
  pool: SandboxPool,
  timeoutMs: number,
  claim: (pod: V1Pod) => Promise<T | undefined>,
): Promise<T | undefined> {
  const namespace = pool.metadata?.namespace ?? "";
  const window = scaleDownPolicyFor(pool).protectionWindowSeconds;
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
            query: { labelSelector: `${SANDBOX_POOL_LABEL}=${pool.metadata?.name}` },
          },
          (event) => {
            if (event.type !== "ADDED" && event.type !== "MODIFIED") return false;
            const [candidate] = orderCandidates([event.object as V1Pod], deps.now(), window, deps.random);
            if (candidate) {
              // Claims run one after another, so a waiter never holds two pods.
              busy = busy.then(async () => {
                if (won !== undefined) return;
                won = await claim(candidate);
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
