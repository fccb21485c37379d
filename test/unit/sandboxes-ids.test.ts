import { describe, expect, it } from "vitest";
import { isSandboxId, newSandboxId } from "../../lib/lifecycle/sandbox-ids.ts";

describe("newSandboxId", () => {
  it("is sbx- then 20 lowercase base32 characters", () => {
    const id = newSandboxId();
    expect(id).toMatch(/^sbx-[a-z2-7]{20}$/);
    expect(isSandboxId(id)).toBe(true);
  });

  it("never repeats and uses the whole alphabet", () => {
    const ids = Array.from({ length: 2000 }, newSandboxId);
    expect(new Set(ids).size).toBe(ids.length);
    const used = new Set(ids.flatMap((id) => [...id.slice(4)]));
    expect([...used].sort().join("")).toBe("234567abcdefghijklmnopqrstuvwxyz");
  });
});

describe("isSandboxId", () => {
  it.each([
    ["a minted id", "sbx-abcdefghij234567klmn"],
    ["an agentbox uuid", "0f8fad5b-d9cb-469f-a165-70867728950e"],
    ["mixed case with . and _", "A.b_c"],
    ["one character", "x"],
    ["63 characters", "a".repeat(63)],
  ])("accepts %s", (_, id) => {
    expect(isSandboxId(id)).toBe(true);
  });

  it.each([
    ["empty", ""],
    ["64 characters", "a".repeat(64)],
    ["a selector injection", "x,team=ml"],
    ["a path", "../pods"],
    ["spaces", "sbx abc"],
    ["leading dash", "-abc"],
    ["trailing dot", "abc."],
  ])("refuses %s", (_, id) => {
    expect(isSandboxId(id)).toBe(false);
  });
});
