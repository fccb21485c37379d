import { describe, expect, it } from "vitest";
import { podName, slotOf } from "../../lib/pool/pod-name.ts";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const long = (n: number) => "p".repeat(n);

describe("podName", () => {
  it.each([
    ["web", 0, "web-0"],
    ["web", 12, "web-12"],
    [long(61), 0, `${long(61)}-0`],
    [long(60), 99, `${long(60)}-99`],
  ])("%s slot %i is %s", (pool, slot, name) => {
    expect(podName(pool, slot)).toBe(name);
  });

  it.each([
    [long(61), 10],
    [long(62), 0],
    [long(253), 0],
    [long(253), 2_147_483_646],
    [`${"a".repeat(50)}-.b.${"c".repeat(40)}`, 7],
  ])("keeps a long pool's names (%#) within 63 characters, a valid name, a stable hash", (pool, slot) => {
    const name = podName(pool, slot);
    expect(name.length).toBeLessThanOrEqual(63);
    expect(name).toMatch(DNS_LABEL);
    expect(name).not.toMatch(/[-.]{2}/);
    expect(name).toMatch(new RegExp(`-[0-9a-f]{8}-${slot}$`));
    expect(podName(pool, slot)).toBe(name);
  });

  it("gives long pools with a shared prefix different names", () => {
    const a = `${long(70)}a`;
    const b = `${long(70)}b`;
    expect(podName(a, 3)).not.toBe(podName(b, 3));
  });

  it.each([-1, 1.5, Number.NaN])("rejects slot %s", (slot) => {
    expect(() => podName("web", slot)).toThrow(RangeError);
  });
});

describe("slotOf", () => {
  it.each([
    ["web", "web-0", 0],
    ["web", "web-17", 17],
    [long(62), podName(long(62), 5), 5],
    [long(200), podName(long(200), 1234), 1234],
    // not slot names: generated (adopted from agentbox), another pool, non-canonical digits
    ["web", "web-x7k2p", undefined],
    ["web", "web-07", undefined],
    ["web", "web", undefined],
    ["web", "web-1-0", undefined],
    ["web-1", "web-1", undefined],
    ["web", "api-0", undefined],
    [long(62), `${long(62)}-5`, undefined],
  ])("slotOf(%s, %s) is %s", (pool, name, slot) => {
    expect(slotOf(pool, name)).toBe(slot);
  });

  it("inverts podName for every slot around the truncation boundary", () => {
    for (const len of [55, 58, 59, 60, 61, 62, 63, 64, 100]) {
      for (const slot of [0, 1, 9, 10, 99, 100, 1000, 99_999]) {
        expect(slotOf(long(len), podName(long(len), slot))).toBe(slot);
      }
    }
  });
});
