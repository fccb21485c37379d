import { describe, expect, it } from "vitest";
import { SharedRead, SharedReads } from "../../lib/util/shared-read.ts";

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
