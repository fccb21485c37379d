// A follow that cannot read the container's log any more (a 403, an unreachable kubelet) must
// say so, not end as "idle" as if the sandbox had gone quiet.

/** FOLLOW_MAX_FAILURES is how many failed reads in a row end a follow with an error. */
export const FOLLOW_MAX_FAILURES = 5;

/**
 * failedReads is the count of failed reads in a row after one more read: 0 after a success,
 * one more after a failure.
 */
export function failedReads(before: number, failed: boolean): number {
  return failed ? before + 1 : 0;
}

/**
 * followFailure is the message a follow ends with after `count` failed reads in a row, naming
 * the apiserver's status when there was one (`status`) and nothing else of the error, whose
 * text may carry addresses and names that are the control plane's, not the tenant's.
 */
export function followFailure(count: number, status: number | undefined): string {
  const why =
    status === undefined ? "the apiserver could not be reached" : `the apiserver answered ${status}`;
  return `the sandbox's container log could not be read ${count} times in a row (${why})`;
}
