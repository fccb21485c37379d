// How long the sampler leaves a node alone after its reads failed: pure, so the rule is tested
// with plain numbers (functions/usage/usage-sampler.ts keeps one NodeRest per failing node).

/** MAX_REST_MS: a node that keeps failing is still tried once a minute. */
export const MAX_REST_MS = 60_000;

/** NodeRest is a failing node's failures in a row, and when (ms since the epoch) it is read again. */
export interface NodeRest {
  failures: number;
  untilMs: number;
}

/**
 * nextRest is a node's rest after one more failure at nowMs: one period after the first, doubling
 * with each failure in a row, at most MAX_REST_MS (a period longer than that rests no sample:
 * the node is tried at each one). A node whose
 * kubelet cannot be reached (down, or one that serves no summary) would otherwise cost the
 * apiserver a dial per period, each held until the transport's timeout; it is still tried, so
 * it is sampled again soon after it recovers.
 */
export function nextRest(previous: NodeRest | undefined, nowMs: number, periodMs: number): NodeRest {
  const failures = (previous?.failures ?? 0) + 1;
  const ms = Math.min(MAX_REST_MS, periodMs * 2 ** Math.min(failures - 1, 30));
  return { failures, untilMs: nowMs + ms };
}

/** isResting tells whether a node is left out of the sample at nowMs (its rest not over yet). */
export const isResting = (rest: NodeRest | undefined, nowMs: number): boolean =>
  rest !== undefined && rest.untilMs > nowMs;
