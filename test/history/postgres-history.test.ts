import pg from "pg";
import { Registry } from "prom-client";
import { describe, expect, inject, it } from "vitest";
import { openHistory } from "../../hosts/node/open-history.ts";
import type { PostgresHistoryStore } from "../../hosts/node/postgres-history.ts";
import { startReconcilerThread } from "../../hosts/node/reconciler-child.ts";
import { freePorts } from "../../infra/cluster/ports.ts";
import { POSTGRES_MIGRATIONS, toPostgres } from "../../lib/history/postgres-sql.ts";
import { selectQuery } from "../../lib/history/sql.ts";
import { HistoryUnavailable } from "../../lib/history/store.ts";
import { createMetrics } from "../../lib/metrics/metrics.ts";
import type { Log } from "../../lib/util/log.ts";
import { nowhere } from "../integration/support/kube.ts";
import { createDatabase, startPostgres } from "../integration/support/postgres.ts";
import { freshPostgres, quiet } from "./backends.ts";
import { closeAfterEach, emptyDatabase, later, schemaOf, store } from "./postgres-support.ts";
import { PLANNED_FILTERS, record } from "./records.ts";

// What only the PostgreSQL store has beyond the contract and the migrations: its query plans,
// timeouts, TLS, its start in both of the host's threads, and a database that is down.

const { ca } = inject("postgres");
closeAfterEach();

describe("the PostgreSQL history store", () => {
  it("read every filter, with and without a cursor, from an index in keyset order: no sort", async () => {
    const { url } = await freshPostgres();
    const s = store(url);
    for (let i = 0; i < 3; i++) await s.put(record(i));
    const after = (await s.query({ limit: 1 })).next;
    const c = new pg.Client({ connectionString: url, query_timeout: 10_000 });
    await c.connect();
    later(() => c.end());
    // A three-row table is read fastest whole: make the planner show what it would do at scale.
    await c.query("SET enable_seqscan = off; SET enable_bitmapscan = off");
    for (const q of PLANNED_FILTERS.flatMap((f) => [f, { ...f, after }])) {
      const { sql, params } = selectQuery(q);
      const { rows } = await c.query(`EXPLAIN ${toPostgres(sql)}`, params);
      const plan = rows.map((r) => String(r["QUERY PLAN"])).join("\n");
      expect({ q, plan }).toEqual({
        q,
        plan: expect.stringMatching(/Index (Only )?Scan using sandbox_history_\w*time/),
      });
      expect({ q, plan }).toEqual({ q, plan: expect.not.stringMatching(/Sort/) });
    }
  });

  it("answers HistoryUnavailable, within its timeout, while nothing listens at its address", async () => {
    const [port] = await freePorts(1);
    const down = store(`postgres://postgres:x@127.0.0.1:${port}/none`, { timeoutMs: 1000 });
    const started = Date.now();
    await expect(down.put(record(1))).rejects.toBeInstanceOf(HistoryUnavailable);
    await expect(down.get("x")).rejects.toBeInstanceOf(HistoryUnavailable);
    await expect(down.query({})).rejects.toBeInstanceOf(HistoryUnavailable);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("bounds a query that waits on a lock by its timeout, then answers again", async () => {
    const { url } = await freshPostgres();
    const s = store(url, { timeoutMs: 500 });
    await s.put(record(1));
    const locker = new pg.Client({ connectionString: url, query_timeout: 10_000 });
    await locker.connect();
    later(() => locker.end());
    await locker.query("BEGIN; LOCK TABLE sandbox_history IN ACCESS EXCLUSIVE MODE");
    const started = Date.now();
    await expect(s.get(record(1).sandboxId)).rejects.toBeInstanceOf(HistoryUnavailable);
    expect(Date.now() - started).toBeLessThan(2500);
    await locker.query("ROLLBACK");
    expect(await s.get(record(1).sandboxId)).toEqual(record(1));
  });

  it("fails the start on a wrong password, without the password in the error", async () => {
    const url = new URL(await emptyDatabase());
    url.password = "wrong-secret";
    const opened = openHistory(
      {
        historyPath: "unused",
        historyDatabase: { url: url.toString(), sslmode: "disable", poolSize: 1, timeoutMs: 5000 },
      },
      quiet,
    );
    await expect(opened).rejects.toThrow(/password authentication failed/);
    await expect(opened).rejects.not.toThrow(/wrong-secret/);
  });

  it("speaks TLS: verify-full with the server's CA, require without; verify-full refuses an unknown CA", async () => {
    const { url } = await freshPostgres();
    const sslOf = async (s: PostgresHistoryStore) => {
      await s.put(record(1, { sandboxId: `tls-${Math.random()}` }));
      return s;
    };
    await sslOf(store(url, { sslmode: "verify-full", ca }));
    await sslOf(store(url, { sslmode: "verify-ca", ca }));
    await sslOf(store(url, { sslmode: "require" }));
    const unknown = store(url, { sslmode: "verify-full" }).put(record(2));
    await expect(unknown).rejects.toThrow(/certificate/);
    await expect(unknown).rejects.not.toBeInstanceOf(HistoryUnavailable);
    // The server saw TLS connections (and the plain ones of the tests with sslmode disable).
    const c = new pg.Client({ connectionString: url, ssl: { ca }, query_timeout: 10_000 });
    await c.connect();
    later(() => c.end());
    expect((await c.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")).rows).toEqual([
      { ssl: true },
    ]);
  });

  it("is opened, and migrated, by the reconciler's thread from the settings it is started with", async () => {
    const url = await emptyDatabase();
    const logged: string[] = [];
    const log: Log = { ...quiet, info: (_o, msg) => logged.push(msg ?? "") };
    const historyDatabase = { url, sslmode: "disable" as const, poolSize: 1, timeoutMs: 5000 };
    const thread = await startReconcilerThread(
      {
        kubeconfig: nowhere(),
        historyPath: "unused",
        historyDatabase,
        tickSeconds: 0,
        tickConcurrency: 1,
      },
      log,
      createMetrics(new Registry()).reconcilerRestarts,
    );
    await thread.close();
    expect(logged).toContain("history database schema ready");
    expect((await schemaOf(url)).versions).toEqual(
      POSTGRES_MIGRATIONS.map(({ version, name }) => ({ version, name })),
    );
  });

  it("starts while its database is down, then migrates and writes once it is back", async () => {
    const server = await startPostgres();
    later(() => server.destroy());
    const url = await createDatabase(server.url("postgres"), "down");
    await server.stop();
    const warned: string[] = [];
    const log: Log = { ...quiet, warn: (_o, msg) => warned.push(msg ?? "") };
    const settings = { url, sslmode: "disable" as const, poolSize: 2, timeoutMs: 1000 };
    const opened = await openHistory({ historyPath: "unused", historyDatabase: settings }, log);
    later(() => opened.close());
    expect(warned).toEqual(["history database unavailable at start; migrating when it is back"]);
    await expect(opened.store.put(record(1))).rejects.toBeInstanceOf(HistoryUnavailable);
    await server.start();
    expect(await opened.store.put(record(1))).toBe("inserted");
    // Down again and back: the pool drops the dead connections and answers with new ones.
    await server.stop();
    await expect(opened.store.get(record(1).sandboxId)).rejects.toBeInstanceOf(HistoryUnavailable);
    await server.start();
    expect(await opened.store.put(record(1))).toBe("exists");
    expect((await schemaOf(url)).versions).toEqual(
      POSTGRES_MIGRATIONS.map(({ version, name }) => ({ version, name })),
    );
  });
});
