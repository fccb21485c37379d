import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deleteSandbox } from "../../functions/api/delete-sandbox.ts";
import type { HostDeps } from "../../functions/host-deps.ts";
import { pauseSandbox } from "../../functions/snapshots/pause-sandbox.ts";
import { recordEvents } from "../../functions/snapshots/record-events.ts";
import { resumeSandbox } from "../../functions/snapshots/resume-sandbox.ts";
import { sweepSnapshots } from "../../functions/snapshots/sweep-snapshots.ts";
import { PostgresHistoryStore } from "../../hosts/node/postgres-history.ts";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { type SandboxSnapshot, SNAPSHOT_FINALIZER, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { kube, until } from "./support/kube.ts";
import { pauseSandboxes } from "./support/pause-sandboxes.ts";
import { createDatabase, type PostgresServer, startPostgres } from "./support/postgres.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// Issue #39 with the history in PostgreSQL, really stopped: a pause or resume never waits for the
// history. Its event is owed on the snapshot (status.recorded, an outbox; status.pendingEvents
// once a new pause replaces the facts) and written once the database is back, by the tick's
// sweep: nothing lost, nothing doubled. A sandbox killed while paused keeps its snapshot (its
// agent's finalizer) until its terminal record and events are written too.

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

  it("a sandbox killed while paused: the kill lands, its snapshot waits, then its record and three events are written once", async () => {
    await t.allIdle();
    const id = await create(await t.keyOf(user));
    let killed: SandboxSnapshot | undefined;
    let beforeKill: SandboxSnapshot | undefined;
    await server.stop();
    try {
      expect(await pauseSandbox(deps, tenant, id, { waitMs: 60_000 })).toMatchObject({ ok: true });
      await t.allIdle();
      expect(await resumeSandbox(deps, tenant, id, { waitSeconds: 60 })).toMatchObject({ ok: true });
      expect(await pauseSandbox(deps, tenant, id, { waitMs: 60_000 })).toMatchObject({ ok: true });
      await t.allIdle();
      beforeKill = await snapshotOf(id);
      // The kill is answered: it landed, though its record could not be written.
      expect(await deleteSandbox(deps, tenant, id)).toBe("released");
      await sweepSnapshots(deps, t.ns, await t.pods());
      // The snapshot holds what the history lacks; its agent keeps it.
      killed = await snapshotOf(id);
      expect(killed?.metadata?.deletionTimestamp).toBeTruthy();
      expect(killed?.metadata?.finalizers).toContain(SNAPSHOT_FINALIZER);
      expect(killed?.status?.recorded?.ended).toBeUndefined();
      expect(killed?.status?.pendingEvents?.map((e) => [e.kind, e.n])).toEqual([
        ["paused", 1],
        ["resumed", 1],
      ]);
    } finally {
      await server.start();
    }
    // The outbox's writer, given a version the kill made stale: it marks the events on a fresh read.
    const marked = await recordEvents(deps, beforeKill as SandboxSnapshot);
    expect(marked.metadata?.deletionTimestamp).toBeTruthy();
    expect(marked.status?.recorded).toEqual({ paused: 2, resumed: 1 });
    expect(marked.status?.pendingEvents).toBeUndefined();
    // Its end record is the sweep's to write; then the agent lets the snapshot go.
    await until("the sweep to write what it owed and the agent to let it go", 60_000, async () => {
      await sweepSnapshots(deps, t.ns, await t.pods());
      return (await snapshotOf(id)) === undefined ? true : undefined;
    });
    expect((await history.events(id)).map((e) => [e.kind, e.n])).toEqual([
      ["paused", 1],
      ["resumed", 1],
      ["paused", 2],
    ]);
    const record = await history.get(id);
    expect(record).toMatchObject({ sandboxId: id, stopReason: "Released" });
    expect(Date.parse(record?.terminatedAt ?? "")).toBe(
      new Date(String(killed?.metadata?.deletionTimestamp)).getTime(),
    );
  }, 180_000);
});
