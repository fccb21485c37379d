import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { parseGoDuration } from "../util/duration.ts";

/** DEFAULT_STARTUP_SECONDS is agentbox's startup timeout when neither request nor pool sets one. */
export const DEFAULT_STARTUP_SECONDS = 120;

/**
 * MAX_WAIT_SECONDS caps a create's wait for Running (5 minutes, waitTimeout's own maximum): a
 * startup timeout may be up to an hour, but a request held open that long outlives clients,
 * proxies and Worker invocations; the start itself goes on and is still timed out by the pool.
 */
export const MAX_WAIT_SECONDS = 300;

/**
 * waitSeconds is how long a create with `wait` waits for Running: the request's waitTimeout (the
 * schema holds it to MAX_WAIT_SECONDS), else its startupTimeout, else the pool's
 * defaultStartupTimeout, else two minutes, each of those capped at MAX_WAIT_SECONDS.
 */
export function waitSeconds(
  pool: SandboxPool,
  req: { waitTimeout?: number; startupTimeout?: number },
): number {
  if (req.waitTimeout !== undefined) return req.waitTimeout;
  const ms = parseGoDuration(pool.spec.defaultStartupTimeout);
  const startup = req.startupTimeout ?? (ms && ms > 0 ? Math.ceil(ms / 1000) : DEFAULT_STARTUP_SECONDS);
  return Math.min(startup, MAX_WAIT_SECONDS);
}
