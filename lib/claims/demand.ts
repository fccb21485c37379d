import { parseTime } from "../util/time.ts";

/** DEMAND_THROTTLE_SECONDS is how often a pool's last-sandbox-create-time is rewritten at most. */
export const DEMAND_THROTTLE_SECONDS = 5;

/**
 * demandWorthRecording says whether a create should stamp the pool's last-sandbox-create-time
 * now, given the stamps known (the stored annotation, this process's last write): when none is
 * readable, or the latest is older than the throttle.
 */
export function demandWorthRecording(known: readonly unknown[], now: Date): boolean {
  const times = known.flatMap((t) => parseTime(t)?.getTime() ?? []);
  return times.length === 0 || now.getTime() - Math.max(...times) >= DEMAND_THROTTLE_SECONDS * 1000;
}
