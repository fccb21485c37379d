import { Miniflare } from "miniflare";
import { afterAll, describe, expect, it } from "vitest";
import { D1HistoryStore, type D1Like } from "../../hosts/worker/d1-history.ts";
import { freePorts } from "../../infra/cluster/ports.ts";
import type { LifecycleEvent } from "../../lib/history/lifecycle-event.ts";
import { HistoryUnavailable } from "../../lib/history/store.ts";
import { migrationStatements } from "../integration/support/d1-migrations.ts";
import { backends, freshEach } from "./backends.ts";
import { closeAfterEach, later, store } from "./postgres-support.ts";
import { lifecycle, record } from "./records.ts";

// The lifecycle events' contract (each pause and each resume of a sandbox), on the history's
// three real backends (SQLite, PostgreSQL, D1 in Miniflare): idempotent puts keyed by (sandbox,
// kind, n), a sandbox's events oldest first and only its own, hosts racing, bad events refused;
// and the same answers from all three.

const all = backends();
afterAll(() => Promise.all(all.map((b) => b.dispose())));
closeAfterEach();

const A = "sbx-a";
const GiB = 1024 ** 3;

/** lifeOf is a sandbox paused and resumed `rounds` times, then paused once more: its events in order. */
const lifeOf = (sandboxId: string, rounds: number, over: Partial<LifecycleEvent> = {}) => [
  ...Array.from({ length: rounds }, (_, k) => [
    lifecycle(sandboxId, "paused", k + 1, over),
    lifecycle(sandboxId, "resumed", k + 1, over),
  ]).flat(),
  lifecycle(sandboxId, "paused", rounds + 1, over),
];

/** shuffled is `events` in a fixed order that is not theirs (reversed halves, interleaved). */
const shuffled = <T>(events: readonly T[]) => {
  const half = Math.ceil(events.length / 2);
  const [a, b] = [events.slice(0, half).reverse(), events.slice(half).reverse()];
  return a.flatMap((e, i) => (b[i] ? [b[i], e] : [e]));
};

describe.each(all)("the $name history's lifecycle events", (backend) => {
  const fresh = freshEach(backend);

  it("round-trip an event, its optional fields set or absent, and keep the first of a (sandbox, kind, n)", async () => {
    const store = (await fresh()).open();
    const pause = lifecycle(A, "paused", 1, { bytes: 5 * GiB });
    const bare: LifecycleEvent = {
      sandboxId: A,
      kind: "resumed",
      n: 1,
      at: "2026-11-21T10:02:00Z",
      namespace: "ns",
      poolName: "p",
      podName: "p-1",
      images: {},
    };
    expect(await store.putEvent(pause)).toBe("inserted");
    // Written again (a step that crashed after the put), with other figures: nothing changes.
    expect(await store.putEvent({ ...pause, podName: "elsewhere", bytes: 1 })).toBe("exists");
    expect(await store.putEvent(bare)).toBe("inserted");
    // The same kind and n of another sandbox is another event.
    expect(await store.putEvent(lifecycle("sbx-b", "paused", 1))).toBe("inserted");
    expect(await store.events(A)).toEqual([pause, bare]);
    expect(await store.events("sbx-none")).toEqual([]);
    // Events are not records: the sandbox has no terminal record, and the list shows none.
    expect(await store.get(A)).toBeUndefined();
    expect((await store.query({})).records).toEqual([]);
    expect(await store.put(record(1, { sandboxId: A }))).toBe("inserted");
    expect(await store.events(A)).toEqual([pause, bare]);
  });

  it("keep a time in UTC, whole seconds, whatever offset or fraction it is given with", async () => {
    const store = (await fresh()).open();
    // 10:03:07 UTC, at +02:00 with milliseconds: it sorts between 10:03:00 and 10:04:00.
    await store.putEvent(lifecycle(A, "resumed", 2, { at: "2026-11-21T12:03:07.900+02:00" }));
    await store.putEvent(lifecycle(A, "paused", 2));
    await store.putEvent(lifecycle(A, "paused", 3));
    expect((await store.events(A)).map((e) => [e.kind, e.n, e.at])).toEqual([
      ["paused", 2, "2026-11-21T10:03:00Z"],
      ["resumed", 2, "2026-11-21T10:03:07Z"],
      ["paused", 3, "2026-11-21T10:05:00Z"],
    ]);
  });

  it("answer a sandbox's events oldest first, a tie in the order it happened, and no other sandbox's", async () => {
    const store = (await fresh()).open();
    const life = lifeOf(A, 3);
    // A resume and the next pause in one second, and that pause and the resume after it too.
    const tie = "2026-11-21T10:30:00Z";
    const tied = [
      lifecycle(A, "resumed", 4, { at: tie }),
      lifecycle(A, "paused", 5, { at: tie }),
      lifecycle(A, "resumed", 5, { at: tie }),
    ];
    // Sandboxes whose ids sort next to A's, their events at the same times as A's.
    const others = ["sbx-A", "sbx-a-1", "sbx-a_", "sbx-"].flatMap((id) => lifeOf(id, 2));
    for (const e of shuffled([...life, ...tied, ...others])) expect(await store.putEvent(e)).toBe("inserted");
    expect(await store.events(A)).toEqual([...life, ...tied]);
    expect(await store.events("sbx-a-1")).toEqual(lifeOf("sbx-a-1", 2));
    expect(await store.events("sbx-a%")).toEqual([]);
  });

  it("three hosts racing on the same 60 events: each stored once, each answered inserted once", async () => {
    const database = await fresh();
    const hosts = [database.open(), database.open(), database.open()];
    const ids = Array.from({ length: 20 }, (_, i) => `sbx-${String(i).padStart(2, "0")}`);
    const events = ids.flatMap((id) => lifeOf(id, 1));
    const answers = await Promise.all(hosts.map((h) => Promise.all(events.map((e) => h.putEvent(e)))));
    const inserted = events.map((_, i) => answers.filter((a) => a[i] === "inserted").length);
    expect(inserted).toEqual(events.map(() => 1));
    for (const h of hosts)
      for (const id of ids) expect({ id, events: await h.events(id) }).toEqual({ id, events: lifeOf(id, 1) });
  });

  it("refuse a malformed event, naming its field, and write nothing", async () => {
    const store = (await fresh()).open();
    const pause = lifecycle(A, "paused", 1);
    const bad: [Partial<LifecycleEvent> | Record<string, unknown>, RegExp][] = [
      [{ n: 0 }, /^n: must be at least 1$/],
      [{ n: 1.5 }, /^n: must be an integer$/],
      [{ kind: "stopped" }, /^kind: must be "paused" or "resumed"$/],
      [{ at: "yesterday" }, /^at: must be an RFC 3339 time$/],
      [{ at: "2026-11-21T10:00:00,5Z" }, /^at: must be an RFC 3339 time$/],
      [{ sandboxId: "" }, /^sandboxId: must not be empty$/],
      [{ bytes: -1 }, /^bytes: must not be negative$/],
      [{ kind: "resumed", bytes: 10 }, /^bytes: only a pause has a size$/],
    ];
    for (const [over, message] of bad) {
      const put = store.putEvent({ ...pause, ...over } as LifecycleEvent);
      await expect(put).rejects.toBeInstanceOf(RangeError);
      await expect(put).rejects.toThrow(message);
    }
    expect(await store.events(A)).toEqual([]);
    expect(await store.events("")).toEqual([]);
    expect(await store.putEvent(pause)).toBe("inserted");
  });
});

describe("the three backends' lifecycle events", () => {
  it("answer the same events, in the same order, for the same puts", async () => {
    const events = [
      ...lifeOf(A, 4),
      ...lifeOf("sbx-b", 2, { team: undefined, user: undefined, at: "2026-11-21T10:00:00Z" }),
      lifecycle("sbx-Äa", "paused", 1, { at: "2026-11-21T10:00:00.5+00:00", images: { a: "x", b: "y" } }),
    ];
    const answers: LifecycleEvent[][][] = [];
    for (const backend of all) {
      const db = await backend.fresh();
      try {
        const s = db.open();
        for (const e of shuffled(events)) await s.putEvent(e);
        answers.push(await Promise.all([A, "sbx-b", "sbx-Äa"].map((id) => s.events(id))));
      } finally {
        await db.close();
      }
    }
    const [sqlite, ...others] = answers;
    expect(sqlite?.map((a) => a.length)).toEqual([9, 5, 1]);
    // All of sbx-b's at one time: ordered by n, then kind.
    expect(sqlite?.[1]?.map((e) => `${e.kind}${e.n}`)).toEqual([
      "paused1",
      "resumed1",
      "paused2",
      "resumed2",
      "paused3",
    ]);
    expect(others).toHaveLength(2);
    for (const other of others) expect(other).toEqual(sqlite);
  });
});

describe("a PostgreSQL history that is down", () => {
  it("answer HistoryUnavailable, within the store's timeout, while nothing listens at its address", async () => {
    const [port] = await freePorts(1);
    const down = store(`postgres://postgres:x@127.0.0.1:${port}/none`, { timeoutMs: 1000 });
    const started = Date.now();
    await expect(down.putEvent(lifecycle(A, "paused", 1))).rejects.toBeInstanceOf(HistoryUnavailable);
    await expect(down.events(A)).rejects.toBeInstanceOf(HistoryUnavailable);
    expect(Date.now() - started).toBeLessThan(3000);
  });
});

describe("a D1 history without migration 0004", () => {
  it("name the migration to apply when the database lacks their table (0004 not applied)", async () => {
    const mf = new Miniflare({
      modules: true,
      script: "export default { fetch() { return new Response(null, { status: 204 }); } };",
      compatibilityDate: "2026-07-01",
      d1Databases: ["HISTORY"],
    });
    later(() => mf.dispose());
    const db = await mf.getD1Database("HISTORY");
    await db.batch([...migrationStatements(), "DROP TABLE sandbox_lifecycle"].map((s) => db.prepare(s)));
    const d1 = new D1HistoryStore(db as unknown as D1Like);
    const missing =
      /the D1 history database has no sandbox_lifecycle table: apply its migrations \(npx wrangler d1 migrations apply agentbox-history --remote\)/;
    await expect(d1.putEvent(lifecycle(A, "paused", 1))).rejects.toThrow(missing);
    await expect(d1.events(A)).rejects.toThrow(missing);
    // The records' table is there: they are read as before.
    expect(await d1.get(A)).toBeUndefined();
  });
});
