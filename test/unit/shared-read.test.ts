import { describe, expect, it } from "vitest";
import { NextRead, NextReads, SharedRead, SharedReads } from "../../lib/util/shared-read.ts";

describe("SharedRead", () => {
  it("shares a read among calls within maxAgeMs of its start, then reads again", async () => {
    let t = 0;
    let reads = 0;
    const shared = new SharedRead<number>(1000, () => t);
    const read = async () => ++reads;
    expect(await Promise.all([shared.get(read), shared.get(read)])).toEqual([1, 1]);
    t = 999;
    expect(await shared.get(read)).toBe(1);
    t = 1000;
    expect(await shared.get(read)).toBe(2);
    expect(reads).toBe(2);
  });

  it("does not share a failed read once it has failed", async () => {
    let t = 0;
    let calls = 0;
    const shared = new SharedRead<string>(1000, () => t);
    await expect(
      shared.get(async () => {
        calls++;
        throw new Error("apiserver 503");
      }),
    ).rejects.toThrow("apiserver 503");
    t = 1;
    expect(
      await shared.get(async () => {
        calls++;
        return "ok";
      }),
    ).toBe("ok");
    expect(calls).toBe(2);
  });
});

describe("SharedReads", () => {
  it("shares per key: another key reads on its own, an expired key reads again", async () => {
    let t = 0;
    const reads: string[] = [];
    const shared = new SharedReads<string>(1000, () => t);
    const read = (key: string) => () => {
      reads.push(key);
      return Promise.resolve(`${key}${reads.length}`);
    };
    expect(await Promise.all([shared.get("a", read("a")), shared.get("a", read("a"))])).toEqual(["a1", "a1"]);
    expect(await shared.get("b", read("b"))).toBe("b2");
    t = 999;
    expect(await shared.get("a", read("a"))).toBe("a1");
    t = 1000;
    expect(await shared.get("a", read("a"))).toBe("a3");
    expect(reads).toEqual(["a", "b", "a"]);
  });

  it("does not share a failed read once it has failed", async () => {
    const shared = new SharedReads<string>(1000, () => 0);
    await expect(shared.get("a", () => Promise.reject(new Error("apiserver 503")))).rejects.toThrow("503");
    expect(await shared.get("a", () => Promise.resolve("ok"))).toBe("ok");
  });
});

describe("NextRead", () => {
  /** reads hands out reads the test settles by hand, numbered in the order they started. */
  const manual = () => {
    const started: { n: number; settle: (ok: boolean) => void }[] = [];
    const read = () =>
      new Promise<number>((resolve, reject) => {
        const n = started.length + 1;
        started.push({ n, settle: (ok) => (ok ? resolve(n) : reject(new Error(`read ${n} failed`))) });
      });
    return { started, read };
  };

  it("gives callers during a read the next one, which starts when that ends, shared by all of them", async () => {
    const { started, read } = manual();
    const shared = new NextRead<number>(() => 0);
    const first = shared.get(read);
    const during = [shared.get(read), shared.get(read), shared.get(read)];
    expect(started.length).toBe(1);
    started[0]?.settle(true);
    expect(await first).toBe(1);
    await Promise.resolve();
    expect(started.length).toBe(2); // one more read, not three
    started[1]?.settle(true);
    expect(await Promise.all(during)).toEqual([2, 2, 2]);
    // Nothing under way: the next call reads at once.
    const later = shared.get(read);
    expect(started.length).toBe(3);
    started[2]?.settle(true);
    expect(await later).toBe(3);
    expect(shared.busy).toBe(false);
  });

  it("starts the waiting read even when the running one failed, and fails only that one's callers", async () => {
    const { started, read } = manual();
    const shared = new NextRead<number>(() => 0);
    const first = shared.get(read);
    const second = shared.get(read);
    started[0]?.settle(false);
    await expect(first).rejects.toThrow("read 1 failed");
    await Promise.resolve();
    started[1]?.settle(true);
    expect(await second).toBe(2);
  });

  it("keyed: keys do not wait for each other", async () => {
    const { started, read } = manual();
    const shared = new NextReads<number>(() => 0);
    const a = shared.get("a", read);
    const b = shared.get("b", read);
    expect(started.length).toBe(2);
    started[1]?.settle(true);
    started[0]?.settle(true);
    expect(await Promise.all([a, b])).toEqual([1, 2]);
    expect(shared.latest("a")).toEqual({ at: 0, value: 1 });
  });

  it("remembers the latest answer with when its read started, and never replaces it with an older one", async () => {
    let t = 0;
    const { started, read } = manual();
    const shared = new NextRead<number>(() => t);
    const first = shared.get(read);
    t = 5;
    const second = shared.get(read); // waits for the first
    started[0]?.settle(true);
    await first;
    expect(shared.latest).toEqual({ at: 0, value: 1 });
    started[1]?.settle(true);
    await second;
    expect(shared.latest).toEqual({ at: 5, value: 2 });
  });
});
