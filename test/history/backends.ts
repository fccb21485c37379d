import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { afterEach, inject } from "vitest";
import { PostgresHistoryStore } from "../../hosts/node/postgres-history.ts";
import { postgresUsage } from "../../hosts/node/postgres-usage.ts";
import { SqliteHistoryStore } from "../../hosts/node/sqlite-history.ts";
import { SqliteUsageStore } from "../../hosts/node/sqlite-usage.ts";
import { D1HistoryStore, type D1Like } from "../../hosts/worker/d1-history.ts";
import { D1UsageStore } from "../../hosts/worker/d1-usage.ts";
import type { HistoryStore } from "../../lib/history/store.ts";
import type { UsageStore } from "../../lib/usage/store.ts";
import type { Log } from "../../lib/util/log.ts";
import { migrationStatements } from "../integration/support/d1-migrations.ts";
import { createDatabase } from "../integration/support/postgres.ts";

export const quiet: Log = { debug() {}, info() {}, warn() {}, error() {} };

/** Database is one empty history database: open() gives another store on it (its own connection or pool, as another host has). */
export interface Database {
  open(): HistoryStore;
  /** openUsage gives a usage store on it, keeping at most `cap` samples per sandbox (the default's). */
  openUsage(cap?: number): UsageStore;
  close(): Promise<void>;
}

/** Backend makes empty history databases of one kind. */
export interface Backend {
  name: string;
  fresh(): Promise<Database>;
  /** dispose ends what the backend keeps for the whole file (Miniflare). */
  dispose(): Promise<void>;
}

let databases = 0;
/** uniqueName names a database no other test of the run uses. */
export const uniqueName = (prefix: string) => `${prefix}_${process.pid}_${++databases}`;

/** sqlite: a file per database (its stores share it, as the Node host's two threads do). */
const sqlite: Backend = {
  name: "SQLite",
  fresh: async () => {
    const path = join(mkdtempSync(join(tmpdir(), "history-")), "history.sqlite");
    const opened: (SqliteHistoryStore | SqliteUsageStore)[] = [];
    return {
      open: () => {
        const store = new SqliteHistoryStore(path);
        opened.push(store);
        return store;
      },
      openUsage: (cap) => {
        const store = new SqliteUsageStore(path, cap);
        opened.push(store);
        return store;
      },
      close: async () => {
        for (const s of opened) s.close();
      },
    };
  },
  dispose: async () => {},
};

/**
 * freshPostgres makes an empty database on the run's PostgreSQL whose default collation is ICU's
 * en-US (as many installations' is), so a store that sorted by it rather than bytewise would
 * page differently from SQLite. Each open() is a pool of its own.
 */
export async function freshPostgres(poolSize = 4): Promise<Database & { url: string }> {
  const { adminUrl } = inject("postgres");
  const url = await createDatabase(
    adminUrl,
    uniqueName("history"),
    "TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'",
  );
  const opened: PostgresHistoryStore[] = [];
  const open = () => {
    const store = new PostgresHistoryStore({ url, sslmode: "disable", poolSize, timeoutMs: 10_000 }, quiet);
    opened.push(store);
    return store;
  };
  return {
    url,
    open,
    openUsage: (cap) => postgresUsage(open(), cap),
    close: async () => {
      await Promise.all(opened.map((s) => s.close()));
    },
  };
}

const postgres: Backend = { name: "PostgreSQL", fresh: () => freshPostgres(), dispose: async () => {} };

/** d1: Miniflare's D1 (workerd's SQLite), migrated as a deployment's is, emptied for each test. */
function d1(): Backend {
  let mf: Miniflare | undefined;
  return {
    name: "D1",
    fresh: async () => {
      if (!mf) {
        mf = new Miniflare({
          modules: true,
          script: "export default { fetch() { return new Response(null, { status: 204 }); } };",
          compatibilityDate: "2026-07-01",
          d1Databases: ["HISTORY"],
        });
        const db = await mf.getD1Database("HISTORY");
        await db.batch(migrationStatements().map((s) => db.prepare(s)));
      }
      const db = await mf.getD1Database("HISTORY");
      await db.batch(
        ["sandbox_history", "sandbox_lifecycle", "sandbox_usage", "sandbox_usage_series"].map((t) =>
          db.prepare(`DELETE FROM ${t}`),
        ),
      );
      const d1 = db as unknown as D1Like;
      return {
        open: () => new D1HistoryStore(d1),
        openUsage: (cap) => new D1UsageStore(d1, cap),
        close: async () => {},
      };
    },
    dispose: async () => {
      await mf?.dispose();
      mf = undefined;
    },
  };
}

/**
 * freshEach is what a describe block's tests call for an empty database of `backend`, one per
 * test, closed after it.
 */
export function freshEach(backend: Backend): () => Promise<Database> {
  let db: Database | undefined;
  afterEach(async () => {
    await db?.close();
    db = undefined;
  });
  return async () => {
    db = await backend.fresh();
    return db;
  };
}

/** backends are the three the contract runs against. */
export const backends = (): Backend[] => [sqlite, postgres, d1()];
