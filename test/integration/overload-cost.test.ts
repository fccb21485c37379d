import { beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import { NextReads } from "../../lib/util/shared-read.ts";
import { inProcessApi } from "./support/in-process-api.ts";
import { poolTest } from "./support/steps.ts";

// A burst twice a pool's size, against the create route running in this process over a transport
// that records every request: the creates that find the pool drained share their fresh looks
// (one consistent list at a time per pool), instead of one list each.

const t = poolTest("overload");
const { deps, sent, app } = inProcessApi(t.deps, { freshLooks: new NextReads(() => Date.now()) });
const N = 30;
let key = "";

beforeAll(async () => {
  key = await createApiKey(deps, { team: "overload-test", user: "u" });
  await t.readyPool("p", N);
});

describe("a burst twice the pool's size", () => {
  it("serves the pool's worth and answers the rest 503 after fresh looks it shares", async () => {
    sent.length = 0;
    const answers = await Promise.all(
      Array.from({ length: 2 * N }, () =>
        app.request("/v1/sandboxes", {
          method: "POST",
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: JSON.stringify({ pool: `${t.ns}/p` }),
        }),
      ),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(N);
    expect(statuses.filter((s) => s === 503)).toHaveLength(N);
    // Consistent (not cached) lists of the pool's idle pods: each of the N refused creates needs
    // one started after it asked; shared, they cost a few (unshared, at least one each).
    const fresh = sent.filter(
      (r) =>
        r.method === "GET" &&
        r.path === `/api/v1/namespaces/${t.ns}/pods` &&
        r.query?.resourceVersion === undefined &&
        (r.query?.labelSelector ?? "").includes("sandbox-phase=idle"),
    );
    expect(fresh.length).toBeGreaterThan(0);
    expect(fresh.length).toBeLessThan(N / 2);
  }, 120_000);
});
