import { describe, expect, it } from "vitest";
import { getFreshness, listFreshness } from "../../lib/kube/read-options.ts";

describe("read freshness", () => {
  it("reads from etcd unless told otherwise", () => {
    expect(getFreshness(undefined)).toEqual({});
    expect(listFreshness({})).toEqual({});
  });

  it("asks the watch cache for any version: 0 for a get, not-older-than 1 for a list (which keeps its limit)", () => {
    expect(getFreshness({ cached: true })).toEqual({ resourceVersion: "0" });
    expect(listFreshness({ cached: true })).toEqual({
      resourceVersion: "1",
      resourceVersionMatch: "NotOlderThan",
    });
  });

  it("reads a get at least as new as a version someone reported, whether or not cached is set", () => {
    expect(getFreshness({ notOlderThan: "4711" })).toEqual({ resourceVersion: "4711" });
    expect(getFreshness({ notOlderThan: "4711", cached: true })).toEqual({ resourceVersion: "4711" });
  });
});
