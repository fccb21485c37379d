import { parseTime } from "../util/time.ts";

/** DEMAND_THROTTLE_SECONDS is how often a pool's last-sandbox-create-time is rewritten at most. */
export const DEMAND_THROTTLE_SECONDS = 5;

/**
 * demandWorthRecording says whether a create that found no idle pod should stamp the pool's
 * last-sandbox-create-time now: when it is absent, unreadable or older than the throttle.
 */
export function demandWorthRecording(stored: string | undefined, now: Date): boolean {
  const last = parseTime(stored);
  return !last || now.getTime() - last.getTime() >= DEMAND_THROTTLE_SECONDS * 1000;
}
