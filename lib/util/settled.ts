/** Settled is how a promise ended: its value, or the error it rejected with. */
export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * settled turns a promise into one that always fulfils, with how it ended. Work started early
 * and awaited later (a key check running while the body arrives) goes through it, so a rejection
 * in between is observed at once instead of counting as unhandled and ending the process.
 */
export function settled<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}
