import { afterEach, describe, expect, it, vi } from "vitest";
import { waitAtMost, withTimeout } from "../../lib/util/with-timeout.ts";

// Bounded waits, on a fake clock: what settles first wins, and nothing rejects unobserved.

afterEach(() => {
  vi.useRealTimers();
});

describe("waitAtMost", () => {
  it("resolves true when the work settles first, false when the time is up, and never rejects", async () => {
    vi.useFakeTimers();
    expect(await waitAtMost(Promise.resolve(1), 1000)).toBe(true);
    let late: boolean | undefined;
    const never = new Promise<void>(() => {});
    const bounded = waitAtMost(never, 1000).then((settled) => {
      late = settled;
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(late).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    await bounded;
    expect(late).toBe(false);
    await expect(waitAtMost(Promise.reject(new Error("no")), 1000)).resolves.toBe(true);
  });
});

describe("withTimeout", () => {
  it("rejects naming what timed out, once the time is up", async () => {
    vi.useFakeTimers();
    const slow = withTimeout(new Promise(() => {}), 50, "the list");
    const seen = expect(slow).rejects.toThrow("the list timed out after 50 ms");
    await vi.advanceTimersByTimeAsync(50);
    await seen;
  });
});
