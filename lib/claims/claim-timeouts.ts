// A claim's timeouts: the request's, else its pool's defaults (an Env's overrides reach the pool as
// its defaults). agentbox writes the resolved startup timeout at claim time, from the request or
// the pool default, and applies the pool's defaultIdleTimeout to creates that give none.
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { parseGoDuration } from "../util/duration.ts";

/** ClaimTimeouts are the seconds a claim writes (absent: no such timeout on the sandbox). */
export interface ClaimTimeouts {
  idleTimeoutSeconds?: number;
  startupTimeoutSeconds?: number;
}

/** wholeSeconds is a Go duration as whole seconds, when it is a positive one. */
function wholeSeconds(duration: string | undefined): number | undefined {
  const ms = parseGoDuration(duration);
  return ms !== undefined && ms >= 1000 ? Math.floor(ms / 1000) : undefined;
}

/**
 * claimTimeouts resolves a create's timeouts: each one the request gives wins (an idleTimeout of 0
 * explicitly means none), else the pool's defaultIdleTimeout / defaultStartupTimeout; no value
 * means no timeout (the Starting phase then has no per-sandbox bound, as upstream).
 */
export function claimTimeouts(
  pool: Pick<SandboxPool, "spec">,
  req: { idleTimeout?: number | undefined; startupTimeout?: number | undefined },
): ClaimTimeouts {
  const idle = req.idleTimeout ?? wholeSeconds(pool.spec.defaultIdleTimeout);
  const startup = req.startupTimeout ?? wholeSeconds(pool.spec.defaultStartupTimeout);
  return {
    ...(idle ? { idleTimeoutSeconds: idle } : {}),
    ...(startup ? { startupTimeoutSeconds: startup } : {}),
  };
}
