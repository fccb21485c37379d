/**
 * withTimeout settles like `work`, or rejects with "<what> timed out after <ms> ms" once `ms`
 * pass first. `work` keeps running (the transports cannot all be cancelled) but its late
 * rejection stays observed, so it never surfaces as an unhandled rejection.
 */
export function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  work.catch(() => {});
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * waitAtMost resolves once `work` settles or `ms` pass, whichever comes first, and never rejects:
 * for a caller that waits a bounded while for something another caller started (a first list),
 * then reads the state itself rather than the promise's value.
 */
export async function waitAtMost(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([work.then(noop, noop), late]);
  clearTimeout(timer);
}

const noop = () => {};
