import type pg from "pg";
import {
  MIGRATION_LOCK,
  type Migration,
  POSTGRES_MIGRATIONS,
  pendingMigrations,
  SCHEMA_TABLE,
} from "../../lib/history/postgres-sql.ts";

/** MigrateResult says which versions a database was at and is at now (ahead: newer than this host). */
export interface MigrateResult {
  from: number;
  to: number;
  applied: number[];
  /** ahead: the database has versions this host does not know (a newer release migrated it). */
  ahead: boolean;
}

/**
 * migrate brings a PostgreSQL history database to the latest of `migrations`, in one transaction
 * that first takes the advisory lock MIGRATION_LOCK: of hosts starting at once, one applies what
 * is missing while the others wait, then find nothing left to do. PostgreSQL's DDL is
 * transactional, so a host that dies midway leaves the previous version, not half of the next.
 * The client's own timeouts bound each statement (the store gives it minutes: an index built on
 * a big table, or a wait for another host's migration). A database ahead of this host (a newer
 * release migrated it, and this one is rolled back) is left as it is: migrations only ever add.
 */
export async function migrate(
  client: pg.ClientBase,
  migrations: readonly Migration[] = POSTGRES_MIGRATIONS,
): Promise<MigrateResult> {
  const query = (text: string, values?: unknown[]) => client.query(text, values);
  await query("BEGIN");
  try {
    await query("SELECT pg_advisory_xact_lock($1::bigint)", [MIGRATION_LOCK]);
    await query(SCHEMA_TABLE);
    const { rows } = await query("SELECT version, name FROM agentbox_history_schema ORDER BY version");
    const applied = rows as { version: number; name: string }[];
    const pending = pendingMigrations(applied, migrations);
    for (const m of pending) {
      for (const statement of m.statements) await query(statement);
      await query("INSERT INTO agentbox_history_schema (version, name) VALUES ($1, $2)", [m.version, m.name]);
    }
    await query("COMMIT");
    const from = Math.max(0, ...applied.map((a) => a.version));
    const known = Math.max(0, ...migrations.map((m) => m.version));
    return {
      from,
      to: Math.max(from, ...pending.map((m) => m.version)),
      applied: pending.map((m) => m.version),
      ahead: from > known,
    };
  } catch (e) {
    // A rollback that fails too (the connection is gone) ends the transaction all the same.
    await query("ROLLBACK").catch(() => {});
    throw e;
  }
}
