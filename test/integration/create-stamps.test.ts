import { describe, expect, it } from "vitest";
import { CreateStamps } from "../../functions/api/create-stamps.ts";
import { LAST_SANDBOX_CREATE_TIME_ANNOTATION } from "../../lib/crd/keys.ts";
import { PENDING_REQUESTS_PREFIX } from "../../lib/pool/pending-requests.ts";
import { rfc3339 } from "../../lib/util/time.ts";
import { poolTest } from "./support/steps.ts";

// last-sandbox-create-time on the real apiserver: concurrent requests that each have their own
// memory (Worker requests, several hosts) and read the same pool stamp it once, not once each.

const t = poolTest("stamps");

describe("CreateStamps", () => {
  it("of five requests that read the same pool, one stamps it; the others lose the test quietly", async () => {
    await t.createPool("stamped", 0);
    const old = rfc3339(new Date(Date.now() - 60_000));
    await t.deps.kube.setPoolAnnotations(t.ns, "stamped", { [LAST_SANDBOX_CREATE_TIME_ANNOTATION]: old });
    const read = await t.getPool("stamped");
    const now = new Date();
    const requests = Array.from({ length: 5 }, () => new CreateStamps(t.deps));
    for (const stamps of requests) stamps.stamp(read, now);
    await Promise.all(requests.map((s) => s.flushed()));
    const tally = requests.reduce(
      (sum, s) => ({
        written: sum.written + s.tally.written,
        raced: sum.raced + s.tally.raced,
        failed: sum.failed + s.tally.failed,
      }),
      { written: 0, raced: 0, failed: 0 },
    );
    expect(tally).toEqual({ written: 1, raced: 4, failed: 0 });
    const after = await t.getPool("stamped");
    expect(after.metadata?.annotations?.[LAST_SANDBOX_CREATE_TIME_ANNOTATION]).toBe(rfc3339(now));
  });

  it("stamps a pool never stamped without replacing annotations written since the read", async () => {
    await t.createPool("fresh", 0);
    const read = await t.getPool("fresh");
    expect(read.metadata?.annotations).toBeUndefined();
    // A host's pending mark lands between this create's read and its stamp.
    await t.deps.kube.setPoolAnnotations(t.ns, "fresh", {
      [`${PENDING_REQUESTS_PREFIX}h`]: "1 2026-11-24T00:00:00Z",
    });
    const stamps = new CreateStamps(t.deps);
    stamps.stamp(read, new Date());
    await stamps.flushed();
    expect(stamps.tally).toEqual({ written: 1, raced: 0, failed: 0 });
    const after = await t.getPool("fresh");
    expect(after.metadata?.annotations).toMatchObject({
      [`${PENDING_REQUESTS_PREFIX}h`]: "1 2026-11-24T00:00:00Z",
      [LAST_SANDBOX_CREATE_TIME_ANNOTATION]: expect.any(String),
    });
  });
});
