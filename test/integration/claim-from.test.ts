import type { V1Pod } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { claimFrom } from "../../functions/api/claim-from.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { NextReads } from "../../lib/util/shared-read.ts";
import { inProcessApi } from "./support/in-process-api.ts";
import { poolTest, reconcileUntil } from "./support/steps.ts";

// claimFrom's promise (issue #15): "no idle pod" only from a consistent read that shows none,
// however many races a create loses; contention that outlasts the deadline is said as such. The
// claim is the test's (it decides who wins); the lists are the real apiserver's.

const t = poolTest("claimfrom");
const { deps, sent } = inProcessApi(t.deps, { freshLooks: new NextReads(() => Date.now()) });
let pool: SandboxPool;
let empty: SandboxPool;
const freshLists = () =>
  sent.filter(
    (r) => r.method === "GET" && r.path.endsWith("/pods") && r.query?.resourceVersion === undefined,
  );

beforeAll(async () => {
  await t.createPool("none", 0);
  await t.readyPool("five", 5);
  await reconcileUntil(
    t.deps,
    t.ns,
    "none",
    "the empty pool's status",
    async () => (await t.getPool("none")).status !== undefined,
  );
  pool = await t.getPool("five");
  empty = await t.getPool("none");
});

describe("claimFrom", () => {
  it("keeps going past sixty lost races while idle pods remain, and wins", async () => {
    let calls = 0;
    const claim = async (pod: V1Pod) => (++calls > 60 ? pod : undefined);
    sent.length = 0;
    const got = await claimFrom(deps, pool, claim, Date.now() + 30_000);
    expect(got.pod?.metadata?.labels?.["agentbox.navix.sh/sandbox-pool"]).toBe("five");
    expect(got.tried).toBe(61);
    expect(got.contended).toBeUndefined();
    expect(freshLists().length).toBeGreaterThan(0); // it looked afresh between the losses
  });

  it("says contended, not 'none', when it loses every race until the deadline", async () => {
    const got = await claimFrom(deps, pool, async () => undefined, Date.now() + 300);
    expect(got).toMatchObject({ contended: true });
    expect(got.pod).toBeUndefined();
    expect(got.tried).toBeGreaterThan(0);
  });

  it("answers 'none' for a drained pool only after a consistent list shows no idle pod", async () => {
    sent.length = 0;
    const got = await claimFrom(deps, empty, async (pod) => pod, Date.now() + 30_000);
    expect(got).toEqual({ tried: 0 });
    expect(freshLists().length).toBeGreaterThan(0);
  });
});
