import { describe, expect, it } from "vitest";
import { SharedRead } from "../../lib/util/shared-read.ts";

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
