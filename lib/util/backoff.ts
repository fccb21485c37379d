/**
 * RETRY_MS are the pauses before reopening a watch that ended at once or failed, growing while it
 * keeps doing so: a watch is never reopened in a tight loop against an apiserver that refuses it.
 */
const RETRY_MS = [100, 200, 400, 800, 1600] as const;

/** retryDelay is the pause before the attempt-th retry in a row (0-based; the last one repeats). */
export function retryDelay(attempt: number): number {
  return RETRY_MS[Math.max(0, Math.min(attempt, RETRY_MS.length - 1))] ?? 1600;
}
