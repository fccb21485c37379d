// How often the router may ask the apiserver about sandbox ids it does not know. A miss (an id
// the route table has no route for) costs a consistent cluster-wide pod list, and ids are not
// secrets: anyone can send requests for random ones. A token bucket per host caps what misses
// cost the apiserver, whatever clients send; past it a miss is answered as a miss without a read.

/** MissRate is the bucket's refill rate (reads per second) and its size (a burst of reads). */
export interface MissRate {
  perSecond: number;
  burst: number;
}

/** MISS_RATE: 5 reads a second, 10 at once: a handful of fresh sandboxes a second per host. */
export const MISS_RATE: MissRate = { perSecond: 5, burst: 10 };

/** MissBudget is the bucket at a moment: tokens left (fractional) as of `at` (ms). */
export interface MissBudget {
  tokens: number;
  at: number;
}

/** fullBudget is a bucket that starts full at `now`. */
export function fullBudget(now: number, rate: MissRate = MISS_RATE): MissBudget {
  return { tokens: rate.burst, at: now };
}

/**
 * spendMiss refills the bucket for the time since its last use (never past burst; a clock that
 * went back refills nothing) and takes one token when there is one: ok says whether this miss may
 * read the apiserver. The budget returned is the bucket to keep, whether or not it was spent.
 */
export function spendMiss(
  budget: MissBudget,
  now: number,
  rate: MissRate = MISS_RATE,
): { ok: boolean; budget: MissBudget } {
  const elapsed = Math.max(0, now - budget.at);
  const tokens = Math.min(rate.burst, budget.tokens + (elapsed * rate.perSecond) / 1000);
  const at = Math.max(now, budget.at);
  if (tokens < 1) return { ok: false, budget: { tokens, at } };
  return { ok: true, budget: { tokens: tokens - 1, at } };
}
