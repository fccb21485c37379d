import type { SandboxPool } from "../api/sandbox-pool.ts";
import { parseGoDuration } from "../util/duration.ts";

/** DEFAULT_STARTUP_SECONDS is agentbox's startup timeout when neither request nor pool sets one. */
export const DEFAULT_STARTUP_SECONDS = 120;

/**
 * waitSeconds is how long a create with `wait` waits for Running: the request's waitTimeout, else
 * its startupTimeout, else the pool's defaultStartupTimeout, else two minutes.
 */
export function waitSeconds(
  pool: SandboxPool,
  req: { waitTimeout?: number; startupTimeout?: number },
): number {
  if (req.waitTimeout !== undefined) return req.waitTimeout;
  if (req.startupTimeout !== undefined) return req.startupTimeout;
  const ms = parseGoDuration(pool.spec.defaultStartupTimeout);
  return ms && ms > 0 ? Math.ceil(ms / 1000) : DEFAULT_STARTUP_SECONDS;
}
