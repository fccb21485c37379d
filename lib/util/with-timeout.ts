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
 * waitAtMost resolves once `work` settles (true) or `ms` pass (false), whichever comes first, and
 * never rejects:
 * for a caller that waits a bounded while for something another caller started (a first list),
 * then reads the state itself rather than the promise's value.
 */
export async function waitAtMost(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const settled = await Promise.race([work.then(yes, yes), late]);
  clearTimeout(timer);
  return settled;
}

const yes = () => true as const;
