// Paging back from a cursor through a container's log: the kubelet reads forward from a
// sinceTime, with no "until", so the lines just before a cursor are found by choosing how far
// before it to start reading.
import type { LogTime } from "./log-entry.ts";

/**
 * BACKWARD_REACH_MS are the windows a backward page tries, narrowest first: it starts at
 * BACKWARD_FIRST and moves to a wider window when the read held no line at or before the cursor,
 * to a narrower one when the read filled its bytes before reaching the cursor. The last reads
 * from the claim (the whole log).
 */
export const BACKWARD_REACH_MS = [
  5_000,
  60_000,
  15 * 60_000,
  4 * 3600_000,
  Number.POSITIVE_INFINITY,
] as const;
/** BACKWARD_FIRST is the window a backward page tries first (a minute). */
export const BACKWARD_FIRST = 1;

/**
 * BackwardOutcome is what one read from `cursor − window` found: `fits` (it reached the cursor,
 * and holds a line at or before it or started at the claim: the page is right), `empty` (it
 * reached the cursor but no line of the window is at or before it: older lines may exist),
 * `dense` (it filled its bytes before passing the cursor: the lines just before it are unread).
 */
export type BackwardOutcome = "fits" | "empty" | "dense";

/**
 * backwardOutcome judges a read (`entries` oldest first, `truncated`: it filled its bytes) that
 * started at `sinceMs` for a page ending at `cursor` (ms, inclusive) of a log cut at `claimMs`.
 * A read cut at a line of the cursor's own millisecond may miss others of it, so that is dense.
 */
export function backwardOutcome(
  entries: readonly LogTime[],
  truncated: boolean,
  cursor: number,
  sinceMs: number,
  claimMs: number,
): BackwardOutcome {
  const last = entries.at(-1);
  if (truncated && (!last || last.ms <= cursor)) return "dense";
  if (sinceMs > claimMs && !entries.some((e) => e.ms <= cursor)) return "empty";
  return "fits";
}

/**
 * nextReach is the window (an index of BACKWARD_REACH_MS) to read next after `outcome` at `at`,
 * or undefined to stop: on `fits`; at either end of the ladder; and at a window already tried
 * (a wider one was dense and a narrower one empty: the lines before the cursor lie between two
 * windows, and no single read of the bound holds them). Each window is read at most once, so a
 * page costs at most BACKWARD_REACH_MS.length reads.
 */
export function nextReach(
  at: number,
  outcome: BackwardOutcome,
  tried: ReadonlySet<number>,
): number | undefined {
  if (outcome === "fits") return undefined;
  const next = outcome === "empty" ? at + 1 : at - 1;
  return next < 0 || next >= BACKWARD_REACH_MS.length || tried.has(next) ? undefined : next;
}

/** backwardSince is where the read of window `at` before `cursor` starts (the claim when earlier). */
export function backwardSince(cursor: number, at: number, claimMs: number): number {
  return Math.max(claimMs, cursor - (BACKWARD_REACH_MS[at] ?? Number.POSITIVE_INFINITY));
}
