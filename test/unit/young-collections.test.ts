import { describe, expect, it } from "vitest";
import { Traffic } from "../../hosts/node/data-plane/traffic.ts";
import {
  COLLECT_EVERY_BYTES,
  YoungCollections,
  youngCollection,
} from "../../hosts/node/data-plane/young-collections.ts";

// The router asks V8 for a scavenge every COLLECT_EVERY_BYTES it proxies (all exchanges, both
// ways), so a download's socket buffers are freed young; without --expose-gc it asks for none.

describe("YoungCollections", () => {
  it("asks once per COLLECT_EVERY_BYTES moved, carrying the remainder over", () => {
    let asked = 0;
    const young = new YoungCollections(() => asked++, 100);
    young.moved(60);
    expect(asked).toBe(0);
    young.moved(60); // 120: one, 20 carried
    expect(asked).toBe(1);
    young.moved(79); // 99
    expect(asked).toBe(1);
    young.moved(1);
    expect(asked).toBe(2);
  });

  it("counts what Traffic's exchanges move, both ways and across exchanges", () => {
    let asked = 0;
    const young = new YoungCollections(() => asked++);
    const traffic = new Traffic(undefined, Date.now, (n) => young.moved(n));
    const download = traffic.begin("sbx-a", "envd");
    const upload = traffic.begin("sbx-b", "other");
    for (let i = 0; i < 8; i++) download.bytesOut(COLLECT_EVERY_BYTES / 16);
    for (let i = 0; i < 7; i++) upload.bytesIn(COLLECT_EVERY_BYTES / 16);
    expect(asked).toBe(0);
    upload.bytesIn(COLLECT_EVERY_BYTES / 16);
    download.end();
    upload.end();
    expect(asked).toBe(1);
  });

  it("asks V8 for a minor collection through gc, and for nothing without one", () => {
    const calls: unknown[] = [];
    const collect = youngCollection((options: unknown) => calls.push(options));
    collect?.();
    expect(calls).toEqual([{ type: "minor", execution: "async" }]);
    expect(youngCollection(undefined)).toBeUndefined();
  });

  it("observes the promise the async collection answers with (a rejection is never unhandled)", async () => {
    let settled = false;
    const rejected = Promise.reject(new Error("gc failed")).finally(() => {
      settled = true;
    });
    const collect = youngCollection(() => rejected);
    collect?.();
    // Vitest fails the run on an unhandled rejection: wait until this one has surely settled.
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(settled).toBe(true);
  });
});
