import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { Claim } from "../cache/idle-dispatch.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * recordDemand stamps the pool's last-sandbox-create-time for a create, through the host's
 * throttle (deps.stamps) when it has one, else checked against the stored stamp only.
 */
export function recordDemand(deps: HostDeps, pool: SandboxPool, now: Date): void {
  deps.stamps.stamp(pool, now);
}

/**
 * waitForIdle waits until `claim` wins an idle pod of the pools (all in one namespace; an Env's
 * create passes every member, so a pod that turns idle in any of them serves it), or timeoutMs
 * passes, through the host's IdleDispatch (one watch and first-come-first-served claims for all
 * of its waiters). `signal` ends the wait early (the create gives up); `env` is the Env the pools
 * are members of, when they are (its group's protection window). Nothing is queued outside this
 * process: a waiter that times out leaves no trace.
 */
export function waitForIdle<T>(
  deps: HostDeps,
  pools: readonly SandboxPool[],
  timeoutMs: number,
  claim: Claim<T>,
  signal?: AbortSignal,
  env?: SandboxEnv,
): Promise<T | undefined> {
  return deps.idle.wait(pools, timeoutMs, claim, signal, env);
}
