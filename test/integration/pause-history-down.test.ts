import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deleteSandbox } from "../../functions/api/delete-sandbox.ts";
import type { HostDeps } from "../../functions/host-deps.ts";
import { pauseSandbox } from "../../functions/snapshots/pause-sandbox.ts";
import { resumeSandbox } from "../../functions/snapshots/resume-sandbox.ts";
import { sweepSnapshots } from "../../functions/snapshots/sweep-snapshots.ts";
import { PostgresHistoryStore } from "../../hosts/node/postgres-history.ts";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { kube, until } from "./support/kube.ts";
import { pauseSandboxes } from "./support/pause-sandboxes.ts";
import { createDatabase, type PostgresServer, startPostgres } from "./support/postgres.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// Issue #39 with the history in PostgreSQL, really stopped: a pause's event is written before its
// pod goes back to the pool, so with the database down the pause answers "unavailable" (503), the
// sandbox is paused but keeps its pod, and the tick's sweep releases the pod once the event is
// written; a resume answers the same and is taken over by the sweep. Nothing is lost or doubled.

const { cluster } = kube();
const t = tenantPool("pause-hdown", "research", 2);
const user = `u-${randomBytes(3).toString("hex")}`;
const tenant: Tenant = { team: "research", user };
const { create, snapshotOf, carriers } = pauseSandboxes(t, cluster);
let server: PostgresServer;
let history: PostgresHistoryStore;
let deps: HostDeps;

beforeAll(async () => {
  server = await startPostgres();
  const url = await createDatabase(server.url("postgres"), "history");
  history = new PostgresHistoryStore({ url, sslmode: "disable", poolSize: 2, timeoutMs: 2000 }, t.deps.log);
  deps = { ...t.deps, envdPort: cluster.envdPort, history };
});
afterAll(async () => {
  await history?.close();
  await server?.destroy();
});

describe("pause and resume while the history database is down", () => {
  it("a pause keeps the pod until its event is written; a resume is taken over once it can be recorded", async () => {
    await t.allIdle();
    const id = await create(await t.keyOf(user));
    await server.stop();
    try {
      const paused = await pauseSandbox(deps, tenant, id, { waitMs: 60_000 });
      expect(paused).toMatchObject({ ok: false, reason: "unavailable" });
      // Paused, but its pod still runs it: nothing released without its event.
      expect((await snapshotOf(id))?.status?.phase).toBe(SNAPSHOT_PHASE.PAUSED);
      expect(await carriers(id)).toHaveLength(1);
      await sweepSnapshots(deps, t.ns, await t.pods());
      expect(await carriers(id)).toHaveLength(1);
    } finally {
      await server.start();
    }
    await until("the sweep to release the paused sandbox's pod", 60_000, async () => {
      await sweepSnapshots(deps, t.ns, await t.pods());
      return (await carriers(id)).length === 0 ? true : undefined;
    });
    expect((await history.events(id)).map((e) => [e.kind, e.n])).toEqual([["paused", 1]]);
    await t.allIdle();

    await server.stop();
    try {
      const resumed = await resumeSandbox(deps, tenant, id, { waitSeconds: 60 });
      expect(resumed).toMatchObject({ ok: false, reason: "unavailable" });
      // Its claim landed but it is not Resumed until its event is written.
      expect((await snapshotOf(id))?.status?.phase).toBe(SNAPSHOT_PHASE.RESUMING);
    } finally {
      await server.start();
    }
    // Past the resume's own deadline, the sweep adopts the pod its claim took (Resumed).
    const until_ = Date.parse(String((await snapshotOf(id))?.status?.resume?.until ?? ""));
    t.deps.clock.offsetMs = Math.max(0, until_ - Date.now() + 1000);
    try {
      await until("the sweep to take the resume over", 60_000, async () => {
        await sweepSnapshots(deps, t.ns, await t.pods());
        return (await snapshotOf(id))?.status?.phase === SNAPSHOT_PHASE.RESUMED ? true : undefined;
      });
    } finally {
      t.deps.clock.offsetMs = 0;
    }
    expect(await carriers(id)).toHaveLength(1);
    expect((await history.events(id)).map((e) => [e.kind, e.n])).toEqual([
      ["paused", 1],
      ["resumed", 1],
    ]);
    expect(await deleteSandbox(deps, tenant, id)).toBe("released");
  }, 180_000);
});
