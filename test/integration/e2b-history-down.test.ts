import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_E2B_SETTINGS } from "../../hosts/app.ts";
import { PostgresHistoryStore } from "../../hosts/node/postgres-history.ts";
import { e2bRoutes } from "../../http/e2b.ts";
import { inProcessApi, tenantKey } from "./support/in-process-api.ts";
import { createDatabase, type PostgresServer, startPostgres } from "./support/postgres.ts";
import { phaseOf, poolTest, withPostStart } from "./support/steps.ts";

// An E2B create whose sandbox does not start in time, while the history database is down: the
// answer is E2B's 504 with the pod's diagnosis, as with the database up. The failure path looks
// for the sandbox's record (a start the steps ended has one); a history that cannot answer now
// must not turn that answer into a 500.

const t = poolTest("e2b-history-down");
let server: PostgresServer;
let history: PostgresHistoryStore;
let app: Hono;
let key = "";

beforeAll(async () => {
  server = await startPostgres();
  const url = await createDatabase(server.url("postgres"), "history");
  history = new PostgresHistoryStore({ url, sslmode: "disable", poolSize: 2, timeoutMs: 2000 }, t.deps.log);
  const api = inProcessApi(await withPostStart({ ...t.deps, history }));
  app = new Hono().route("/e2b", e2bRoutes(api.deps, DEFAULT_E2B_SETTINGS));
  key = await tenantKey(api.deps, "e2b-history-down");
  // Its sandboxes never run: the image cannot be pulled, and the wait for Running is 2 s.
  await t.readyPool("stuck", 1, {
    defaultStartupTimeout: "2s",
    template: { spec: { containers: [{ name: "sandbox", image: "registry.invalid/unpullable:1" }] } },
  });
});
afterAll(async () => {
  await history?.close();
  await server?.destroy();
});

describe("an E2B create that cannot start, the history database down", () => {
  it("answers E2B's 504, not a 500, and leaves no sandbox behind", async () => {
    await server.stop();
    const res = await app.request("/e2b/v2/sandboxes", {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ templateID: `${t.ns}/stuck` }),
    });
    expect(res.status).toBe(504);
    expect(await res.json()).toMatchObject({
      code: 504,
      message: expect.stringMatching(/did not start within 2 s/),
    });
    const [pod] = await t.pods("stuck");
    expect(["stopping", "idle"]).toContain(phaseOf(pod ?? {}));
  });
});
