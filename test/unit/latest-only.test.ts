import { describe, expect, it } from "vitest";
import { latestOnly } from "../../lib/util/latest-only.ts";

/** gate is a promise the test resolves by hand, so the action's timing is the test's. */
function gate() {
  let open: () => void = () => {};
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

describe("latestOnly", () => {
  it("runs one call at a time and collapses calls made meanwhile into one run with the newest", async () => {
    const seen: number[] = [];
    const gates = [gate(), gate()];
    let active = 0;
    let maxActive = 0;
    const run = latestOnly(async (n: number) => {
      active++;
      maxActive = Math.max(maxActive, active);
      seen.push(n);
      await gates[seen.length - 1]?.promise;
      active--;
    });
    run(1);
    run(2);
    run(3);
    run(4);
    expect(seen).toEqual([1]);
    gates[0]?.open();
    await new Promise((r) => setTimeout(r, 0));
    expect(seen).toEqual([1, 4]);
    gates[1]?.open();
    await new Promise((r) => setTimeout(r, 0));
    expect(maxActive).toBe(1);
    run(5);
    await new Promise((r) => setTimeout(r, 0));
    expect(seen).toEqual([1, 4, 5]);
  });

  it("keeps going after an action rejects", async () => {
    const seen: string[] = [];
    const run = latestOnly(async (s: string) => {
      seen.push(s);
      if (s === "bad") throw new Error("boom");
    });
    run("bad");
    await new Promise((r) => setTimeout(r, 0));
    run("good");
    await new Promise((r) => setTimeout(r, 0));
    expect(seen).toEqual(["bad", "good"]);
  });
});
