import { describe, expect, it } from "vitest";
import { claimedByValue } from "../../lib/claims/claimed-by.ts";
import { isLabelValue } from "../../lib/kube/label-value.ts";

// The claimed-by label's value (lib/claims/claimed-by.ts): a host's instance id as it is when
// a label may hold it, else a short stable hash, and no label for a host without an id.

describe("claimedByValue", () => {
  it("keeps an instance id that is a valid label value", () => {
    for (const id of [
      "bench-host-0",
      "agentbox-functions-7d9f8c6b5-x2k4q",
      "a",
      "host_1.zone-b",
      "x".repeat(63),
    ])
      expect(claimedByValue(id)).toBe(id);
  });

  it("hashes an id a label cannot hold: too long, bad characters, or not alphanumeric at an end", () => {
    const ids = [
      "x".repeat(64),
      "host one",
      "node:7",
      "-host",
      "host.",
      "höst",
      "ip-10-0-0-1.eu-west-1.compute.internal/x",
    ];
    const values = ids.map(claimedByValue);
    for (const v of values) {
      expect(v).toMatch(/^h-[0-9a-f]{16}$/);
      expect(isLabelValue(v ?? "")).toBe(true);
    }
    expect(new Set(values).size).toBe(ids.length);
  });

  it("gives the same id the same value every time (every host, every restart)", () => {
    const id = "a".repeat(80);
    expect(claimedByValue(id)).toBe(claimedByValue(id));
    expect(claimedByValue(id)).not.toBe(claimedByValue(`${id}b`));
  });

  it("gives no value to a host without an instance id", () => {
    expect(claimedByValue(undefined)).toBeUndefined();
    expect(claimedByValue("")).toBeUndefined();
  });
});
