import pg from "pg";
import { afterEach, inject } from "vitest";
import { type PostgresHistorySettings, PostgresHistoryStore } from "../../hosts/node/postgres-history.ts";
import type { Migration } from "../../lib/history/postgres-sql.ts";
import { createDatabase } from "../integration/support/postgres.ts";
import { quiet, uniqueName } from "./backends.ts";

// The PostgreSQL tests' helpers: stores closed after each test, empty databases, a schema's description.

const cleanups: (() => Promise<unknown>)[] = [];

/** closeAfterEach registers the afterEach that runs what later() was given, newest first. */
export function closeAfterEach(): void {
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
}

/** later runs c after the test (closeAfterEach). */
export const later = (c: () => Promise<unknown>) => cleanups.push(c);

/** store opens a store on url with these settings (TLS off unless said), closed after the test. */
export function store(url: string, over: Partial<PostgresHistorySettings> = {}, migrations?: Migration[]) {
  const s = new PostgresHistoryStore(
    { url, sslmode: "disable", poolSize: 2, timeoutMs: 5000, ...over },
    quiet,
    migrations,
  );
  later(() => s.close());
  return s;
}

/** emptyDatabase makes a database with nothing in it (not even the history schema). */
export const emptyDatabase = () => createDatabase(inject("postgres").adminUrl, uniqueName("empty"));

/** schemaOf describes a database's tables, columns (types, collations), indexes and applied versions. */
export async function schemaOf(url: string) {
  const c = new pg.Client({ connectionString: url, query_timeout: 10_000 });
  await c.connect();
  try {
    const columns = await c.query(
      `SELECT table_name, column_name, data_type, is_nullable, collation_name, column_default
       FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
    );
    const indexes = await c.query(
      "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname",
    );
    const versions = await c.query("SELECT version, name FROM agentbox_history_schema ORDER BY version");
    return { columns: columns.rows, indexes: indexes.rows, versions: versions.rows };
  } finally {
    await c.end();
  }
}
