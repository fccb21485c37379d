// When a member pool counts as saturated. The pool autoscaler records its last scale-up attempt
// and its result; the end of the saturation is derived, not stored (seed: PoolScaleUpAttemptResult).
import type { PoolScaleUpAttemptResult } from "../crd/autoscaling.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { parseTime } from "../util/time.ts";

/** SATURATING_RESULTS are the attempt results after which a pool is held back for a cooldown. */
const SATURATING_RESULTS: ReadonlySet<PoolScaleUpAttemptResult> = new Set([
  "JustRight",
  "Insufficient",
  "Failed",
]);

/**
 * saturatedUntil is when a pool's saturation ends: its last scale-up attempt plus the group's
 * saturationCooldownSeconds, when that attempt came back JustRight, Insufficient or Failed;
 * undefined when the last attempt (if any) was Enough. The caller compares it with now.
 */
export function saturatedUntil(pool: SandboxPool, cooldownSeconds: number): Date | undefined {
  const status = pool.status?.autoscaling;
  const result = status?.lastScaleUpAttemptResult;
  const at = parseTime(status?.lastScaleUpAttemptTime);
  if (!result || !at || !SATURATING_RESULTS.has(result)) return undefined;
  return new Date(at.getTime() + cooldownSeconds * 1000);
}
