// A create that waits for its sandbox sees the pod's versions arrive faster than it can act on
// them; acting on each in turn would write from versions already superseded (each such write fails
// its precondition). Acting on the newest one, one run at a time, is all that is useful.

/**
 * latestOnly wraps an async action so at most one call runs at a time; calls made while it runs
 * collapse into one more run with the newest argument. The action must not reject (callers
 * report their own errors); the returned function never throws.
 */
export function latestOnly<T>(action: (arg: T) => Promise<unknown>): (arg: T) => void {
  let running = false;
  let next: { arg: T } | undefined;
  const drain = async () => {
    while (next) {
      const { arg } = next;
      next = undefined;
      await action(arg).catch(() => {});
    }
    running = false;
  };
  return (arg) => {
    next = { arg };
    if (running) return;
    running = true;
    void drain();
  };
}
