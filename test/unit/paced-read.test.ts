import { describe, expect, it } from "vitest";
import { PacedRead } from "../../lib/util/paced-read.ts";

/** clock is a test clock whose sleeps end when the test moves time past them. */
function clock() {
  let t = 0;
  const sleepers: { until: number; wake: () => void }[] = [];
  return {
    now: () => t,
    sleep: (ms: number) =>
      new Promise<void>((wake) => {
        sleepers.push({ until: t + ms, wake });
      }),
    async advance(ms: number) {
      t += ms;
      for (const s of sleepers.splice(0))
        if (s.until <= t) s.wake();
        else sleepers.push(s);
      await flush();
    },
  };
}

const flush = () => new Promise((r) => setTimeout(r, 0));

describe("PacedRead", () => {
  it("shares one read among the callers that came before it started, never one that predates a caller", async () => {
    const c = clock();
    const paced = new PacedRead<number>(250, c.now, c.sleep);
    let reads = 0;
    let release: (() => void) | undefined;
    const read = () =>
      new Promise<number>((resolve) => {
        reads++;
        const n = reads;
        release = () => resolve(n);
      });
    const first = [paced.get(read), paced.get(read)];
    await flush();
    expect(reads).toBe(1);
    // The read is under way: a caller now waits for the next one, shared with every later caller.
    const second = [paced.get(read), paced.get(read), paced.get(read)];
    release?.();
    expect(await Promise.all(first)).toEqual([1, 1]);
    expect(reads).toBe(1); // the next waits for the gap
    await c.advance(249);
    expect(reads).toBe(1);
    await c.advance(1);
    expect(reads).toBe(2);
    release?.();
    expect(await Promise.all(second)).toEqual([2, 2, 2]);
  });

  it("a burst of any size costs one read per gap", async () => {
    const c = clock();
    const paced = new PacedRead<string>(250, c.now, c.sleep);
    let reads = 0;
    const read = async () => {
      reads++;
      return "secret";
    };
    const answers: Promise<string>[] = [];
    for (let step = 0; step < 8; step++) {
      for (let i = 0; i < 100; i++) answers.push(paced.get(read));
      await c.advance(125);
    }
    await c.advance(250);
    expect((await Promise.all(answers)).length).toBe(800);
    // 1 s of callers: a read at 0, 250, 500, 750 and 1000 ms.
    expect(reads).toBeLessThanOrEqual(5);
  });

  it("recent serves the last answer while young; forget drops it; a failed read is not kept", async () => {
    const c = clock();
    const paced = new PacedRead<string>(250, c.now, c.sleep);
    expect(paced.recent(1000)).toBeUndefined();
    await paced.get(async () => "a");
    expect(paced.recent(1000)).toEqual({ value: "a" });
    await c.advance(999);
    expect(paced.recent(1000)).toEqual({ value: "a" });
    await c.advance(1);
    expect(paced.recent(1000)).toBeUndefined();
    await paced.get(async () => "b");
    paced.forget();
    expect(paced.recent(1000)).toBeUndefined();
    await c.advance(250);
    await expect(paced.get(async () => Promise.reject(new Error("apiserver 503")))).rejects.toThrow("503");
    expect(paced.recent(1000)).toBeUndefined();
    await c.advance(250);
    expect(await paced.get(async () => "c")).toBe("c");
  });

  it("a read begun before forget answers its callers but is not kept: no answer from before the change serves", async () => {
    const c = clock();
    const paced = new PacedRead<string>(250, c.now, c.sleep);
    let finish: (v: string) => void = () => {};
    const under = paced.get(() => new Promise<string>((resolve) => (finish = resolve)));
    await flush();
    await c.advance(10);
    paced.forget();
    finish("from before the sign-out");
    expect(await under).toBe("from before the sign-out");
    expect(paced.recent(1000)).toBeUndefined();
  });
});
