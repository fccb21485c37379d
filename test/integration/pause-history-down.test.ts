import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deleteSandbox } from "../../functions/api/delete-sandbox.ts";
import type { HostDeps } from "../../functions/host-deps.ts";
import { pauseSandbox } from "../../functions/snapshots/pause-sandbox.ts";
import { resumeSandbox } from "../../functions/snapshots/resume-sandbox.ts";
import { sweepSnapshots } from "../../functions/snapshots/sweep-snapshots.ts";
import { PostgresHistoryStore } from "../../hosts/node/postgres-history.ts";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { kube, until } from "./support/kube.ts";
import { pauseSandboxes } from "./support/pause-sandboxes.ts";
import { createDatabase, type PostgresServer, startPostgres } from "./support/postgres.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// Issue #39 with the history in PostgreSQL, really stopped: a pause or resume never waits for the
// history. Its event is owed on the snapshot (status.recorded, an outbox; status.pendingEvents
// once a new pause replaces the facts) and written once the database is back, by the tick's
// sweep: nothing lost, nothing doubled.

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
  it("two pause-resume cycles work on; their four events wait on the snapshot and are written once the database is back", async () => {
    await t.allIdle();
    const id = await create(await t.keyOf(user));
    const recorded = async () => (await snapshotOf(id))?.status?.recorded ?? {};
    let firstCycle: SandboxSnapshot | undefined;
    await server.stop();
    try {
      expect(await pauseSandbox(deps, tenant, id, { waitMs: 60_000 })).toMatchObject({ ok: true });
      // Paused and its pod given back, the event still owed (the outbox on the snapshot).
      await t.allIdle();
      expect(await carriers(id)).toEqual([]);
      expect(await recorded()).toEqual({});
      expect(await resumeSandbox(deps, tenant, id, { waitSeconds: 60 })).toMatchObject({ ok: true });
      const first = await snapshotOf(id);
      expect(first?.status?.phase).toBe(SNAPSHOT_PHASE.RESUMED);
      // The sweep cannot write them either while the database is down.
      await sweepSnapshots(deps, t.ns, await t.pods());
      expect(await recorded()).toEqual({});
      // A second pause replaces the first cycle's facts: its events are carried on the snapshot.
      expect(await pauseSandbox(deps, tenant, id, { waitMs: 60_000 })).toMatchObject({ ok: true });
      expect((await snapshotOf(id))?.status?.pendingEvents?.map((e) => [e.kind, e.n])).toEqual([
        ["paused", 1],
        ["resumed", 1],
      ]);
      await t.allIdle();
      expect(await resumeSandbox(deps, tenant, id, { waitSeconds: 60 })).toMatchObject({ ok: true });
      firstCycle = first;
    } finally {
      await server.start();
    }
    await until("the sweep to write the owed events", 60_000, async () => {
      await sweepSnapshots(deps, t.ns, await t.pods());
      const r = await recorded();
      return r.paused === 2 && r.resumed === 2 ? true : undefined;
    });
    const events = await history.events(id);
    expect(events.map((e) => [e.kind, e.n])).toEqual([
      ["paused", 1],
      ["resumed", 1],
      ["paused", 2],
      ["resumed", 2],
    ]);
    // Each with the facts of its own transition, the first cycle's as they were then.
    expect(events[0]?.at).toBe(firstCycle?.status?.pausedAt);
    expect(events[1]?.podName).toBe(firstCycle?.status?.resume?.pod);
    const s = await snapshotOf(id);
    expect(s?.status?.pendingEvents).toBeUndefined();
    expect(events[2]?.at).toBe(s?.status?.pausedAt);
    expect(events[3]?.podName).toBe(s?.status?.resume?.pod);
    // Written once: another sweep writes nothing more.
    await sweepSnapshots(deps, t.ns, await t.pods());
    expect(await history.events(id)).toEqual(events);
    expect(await deleteSandbox(deps, tenant, id)).toBe("released");
  }, 180_000);
});
