// How many logs follows one tenant may hold open on a host at once: each polls the apiserver
// (a pod read and a pods/log read) every second for as long as it lasts.

/** MAX_FOLLOWS is how many follows one tenant may hold open on one host at a time. */
export const MAX_FOLLOWS = 8;

/**
 * FollowSlots counts the open follows of each tenant (by key) on this host. `take` gives a
 * release function, or undefined when the tenant already holds `max`; the release is idempotent,
 * so a follow that ends two ways at once (the client left while the host stopped) frees its slot
 * exactly once. One instance per host's routes, passed in: no module-level state.
 */
export class FollowSlots {
  private readonly held = new Map<string, number>();
  readonly max: number;
  constructor(max = MAX_FOLLOWS) {
    this.max = max;
  }

  /** take reserves a slot of `key`, or answers undefined when all `max` are held. */
  take(key: string): (() => void) | undefined {
    const n = this.held.get(key) ?? 0;
    if (n >= this.max) return undefined;
    this.held.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left > 0) this.held.set(key, left);
      else this.held.delete(key);
    };
  }

  /** count is how many follows `key` holds now. */
  count(key: string): number {
    return this.held.get(key) ?? 0;
  }
}
