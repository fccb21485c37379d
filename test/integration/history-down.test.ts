import type { V1Pod } from "@kubernetes/client-node";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { targetDigests } from "../../functions/digests.ts";
import type { HostDeps } from "../../functions/host-deps.ts";
import { reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { PostgresHistoryStore } from "../../hosts/node/postgres-history.ts";
import { consoleRoutes } from "../../http/console.ts";
import { SANDBOX_PROTECTION_FINALIZER, STOP_REASON_ANNOTATION } from "../../lib/crd/keys.ts";
import { planStopping } from "../../lib/reconcile/stopping.ts";
import { inProcessApi, postCreate, tenantKey } from "./support/in-process-api.ts";
import { until } from "./support/kube.ts";
import { createDatabase, type PostgresServer, startPostgres } from "./support/postgres.ts";
import { isReady, phaseOf, poolTest, reconcileUntil } from "./support/steps.ts";

// The history in PostgreSQL, and PostgreSQL down: the steps keep a stop in its pod's annotations
// (the pod keeps its finalizer) until the record is written, and write it once when the database
// is back; meanwhile history reads answer 503 with Retry-After and creates go on. A real server
// of this file's own, really stopped and started again.

const t = poolTest("history-down");
const TEAM = "history-down";
const ADMIN_TOKEN = "history-down-admin-token-0123456789";
let server: PostgresServer;
let history: PostgresHistoryStore;
let deps: HostDeps;
let api: ReturnType<typeof inProcessApi>;
let ui: Hono;
let key = "";
/** asAdmin carries the console session the admin token signed in to (the cookie holds its id). */
let asAdmin: { headers: { cookie: string } };

beforeAll(async () => {
  server = await startPostgres();
  const url = await createDatabase(server.url("postgres"), "history");
  history = new PostgresHistoryStore({ url, sslmode: "disable", poolSize: 2, timeoutMs: 2000 }, t.deps.log);
  deps = { ...t.deps, history };
  api = inProcessApi(deps);
  ui = new Hono().route("/ui", consoleRoutes({ api: api.deps, adminToken: ADMIN_TOKEN }));
  key = await tenantKey(api.deps, TEAM);
  const signIn = await ui.request("https://console.test/ui/login", {
    method: "POST",
    headers: { origin: "https://console.test", "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ credential: ADMIN_TOKEN }).toString(),
  });
  const session = /agentbox_console=([^;]*)/.exec(signIn.headers.get("set-cookie") ?? "")?.[1];
  if (signIn.status !== 303 || !session) throw new Error(`console sign-in answered ${signIn.status}`);
  asAdmin = { headers: { cookie: `agentbox_console=${session}` } };
  await t.readyPool("p", 2);
});
afterAll(async () => {
  await history?.close();
  await server?.destroy();
});

const create = async () => {
  const res = await postCreate(api.app, key, { pool: `${t.ns}/p` });
  expect(res.status).toBe(201);
  return (await res.json()) as { sandboxId: string; pod: string };
};
const podNamed = async (name: string) => (await t.pods("p")).find((p) => p.metadata?.name === name) as V1Pod;
const asTenant = () => ({ headers: { "x-api-key": key } });

describe("the history in PostgreSQL, the database down", () => {
  it("keeps a stop in its pod until the record is written, answers reads 503 meanwhile, and creates go on", async () => {
    const first = await create();
    await reconcileUntil(deps, t.ns, "p", "the sandbox running", async () =>
      phaseOf(await podNamed(first.pod)) === "running" ? true : undefined,
    );
    const released = await api.app.request(`/v1/sandboxes/${first.sandboxId}`, {
      method: "DELETE",
      ...asTenant(),
    });
    expect(released.status).toBeLessThan(300);
    await server.stop();
    // Wait, running no step, until the released pod is ready to go back to idle: the next run
    // would write its record and reset it.
    const pool = await deps.kube.getPool(t.ns, "p");
    await until("the released pod ready to return to idle", 30_000, async () => {
      const ps = await t.pods("p");
      return planStopping(pool, ps, await targetDigests(deps, ps), deps.now()).length === 1;
    });
    for (let run = 0; run < 3; run++) {
      const report = await reconcilePool(deps, t.ns, "p");
      expect(JSON.stringify(report)).toContain("the history database is unavailable");
      const pod = await podNamed(first.pod);
      expect(phaseOf(pod)).toBe("stopping");
      expect(pod.metadata?.annotations?.[STOP_REASON_ANNOTATION]).toBe("Released");
      expect(pod.metadata?.finalizers).toContain(SANDBOX_PROTECTION_FINALIZER);
    }

    const read = await api.app.request("/v1/history", asTenant());
    expect(read.status).toBe(503);
    expect(read.headers.get("retry-after")).toBe("5");
    expect(((await read.json()) as { error: { code: string } }).error.code).toBe("Unavailable");
    // One sandbox's history (its record and lifecycle events) too.
    const one = await api.app.request(`/v1/history/${first.sandboxId}`, asTenant());
    expect(one.status).toBe(503);
    expect(one.headers.get("retry-after")).toBe("5");
    expect(((await one.json()) as { error: { code: string } }).error.code).toBe("Unavailable");
    const page = await ui.request("/ui/history", asAdmin);
    expect(page.status).toBe(503);
    expect(page.headers.get("retry-after")).toBe("5");
    expect(await page.text()).toContain("The history cannot be read right now");
    const overview = await ui.request("/ui", asAdmin);
    expect(overview.status).toBe(200);
    const shown = await overview.text();
    expect(shown).toContain("The history cannot be read right now");
    // The rest of the overview is there: the pools (an admin sees this file's).
    expect(shown).toContain(t.ns);
    // Creates need no history: the other idle pod is claimed.
    const second = await create();
    expect(second.pod).not.toBe(first.pod);

    await server.start();
    await reconcileUntil(deps, t.ns, "p", "the released pod back to idle", async () => {
      const pod = await podNamed(first.pod);
      return phaseOf(pod) === "idle" && isReady(pod) ? true : undefined;
    });
    expect(await history.get(first.sandboxId)).toMatchObject({
      sandboxId: first.sandboxId,
      podName: first.pod,
      team: TEAM,
      stopReason: "Released",
    });
    const after = await api.app.request("/v1/history", asTenant());
    expect(after.status).toBe(200);
    const records = ((await after.json()) as { records: { sandboxId: string }[] }).records;
    expect(records.map((r) => r.sandboxId)).toEqual([first.sandboxId]);
  });
});
