import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { LIFECYCLE_SCHEMA } from "../../lib/history/lifecycle-sql.ts";
import { type Migration, POSTGRES_MIGRATIONS } from "../../lib/history/postgres-sql.ts";
import { SCHEMA } from "../../lib/history/sql.ts";
import { HistoryUnavailable } from "../../lib/history/store.ts";
import { USAGE_SCHEMA } from "../../lib/usage/sql.ts";
import { closeAfterEach, emptyDatabase, schemaOf, store } from "./postgres-support.ts";
import { lifecycle, record } from "./records.ts";

// The PostgreSQL history's versioned migrations, applied at start: from an empty database, from
// every earlier version, by hosts starting at once, and by hosts of two releases.

closeAfterEach();

/** VERSIONS are the schema's versions, as a migrated database lists them. */
const VERSIONS = [
  { version: 1, name: "sandbox_history" },
  { version: 2, name: "sandbox_usage" },
  { version: 3, name: "sandbox_lifecycle" },
];

describe("the PostgreSQL history's migrations", () => {
  it("bring an empty database to the latest version: SQLite's table and indexes, bytewise text", async () => {
    const url = await emptyDatabase();
    expect(await store(url).migrate()).toEqual({ from: 0, to: 3, applied: [1, 2, 3], ahead: false });
    const schema = await schemaOf(url);
    expect(schema.versions).toEqual(VERSIONS);
    expect(schema.indexes.map((i) => i.indexname)).toEqual([
      "agentbox_history_schema_pkey",
      "sandbox_history_namespace_time",
      "sandbox_history_owner_time",
      "sandbox_history_pkey",
      "sandbox_history_pool_time",
      "sandbox_history_team_time",
      "sandbox_history_time",
      "sandbox_history_user_time",
      "sandbox_lifecycle_pkey",
      "sandbox_usage_pkey",
      "sandbox_usage_series_last",
      "sandbox_usage_series_pkey",
    ]);
    const text = schema.columns.filter((c) => c.table_name.startsWith("sandbox_") && c.data_type === "text");
    expect(text.length).toBeGreaterThan(15);
    expect(text.map((c) => c.collation_name)).toEqual(text.map(() => "C"));
    // A second start finds nothing to do.
    expect(await store(url).migrate()).toEqual({ from: 3, to: 3, applied: [], ahead: false });
  });

  it.each([
    {
      tables: ["sandbox_history"],
      versions: 1,
      sqliteSchema: SCHEMA.filter((s) => !LIFECYCLE_SCHEMA.includes(s)),
    },
    { tables: ["sandbox_usage", "sandbox_usage_series"], versions: 2, sqliteSchema: USAGE_SCHEMA },
    { tables: ["sandbox_lifecycle"], versions: 3, sqliteSchema: LIFECYCLE_SCHEMA },
  ])(
    "translate SQLite's schema of $tables: the same columns, nullability and indexes",
    async ({ tables, versions, sqliteSchema }) => {
      const url = await emptyDatabase();
      await store(url, {}, POSTGRES_MIGRATIONS.slice(0, versions)).migrate();
      const { columns, indexes } = await schemaOf(url);
      const sqlite = new DatabaseSync(":memory:");
      for (const s of sqliteSchema) sqlite.exec(s);
      const TYPES: Record<string, string> = { TEXT: "text", INTEGER: "integer", REAL: "double precision" };
      const want = tables.flatMap((t) =>
        sqlite
          .prepare(`PRAGMA table_info(${t})`)
          .all()
          .map((c) => ({
            table: t,
            name: c.name,
            type: TYPES[String(c.type)],
            nullable: !c.notnull && !c.pk,
          })),
      );
      // The column list of each index, quotes and the schema name aside.
      const keys = (sql: string) =>
        sql.replace(/"/g, "").replace(/^.* ON (public\.)?\w+ (USING btree )?/, "");
      const wantIndexes = sqlite
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
        .all()
        .map((i) => ({ name: i.name, keys: keys(String(i.sql)) }));
      sqlite.close();
      expect(want.length).toBeGreaterThan(0);
      expect(
        columns
          .filter((c) => tables.includes(c.table_name))
          .map((c) => ({
            table: c.table_name,
            name: c.column_name,
            type: c.data_type,
            nullable: c.is_nullable === "YES",
          })),
      ).toEqual(want);
      expect(
        indexes
          .filter(
            (i) => tables.some((t) => i.indexname.startsWith(`${t}_`)) && !i.indexname.endsWith("_pkey"),
          )
          .map((i) => ({ name: i.indexname, keys: keys(i.indexdef) })),
      ).toEqual(wantIndexes);
    },
  );

  it("apply each version once when several hosts start at once", async () => {
    const url = await emptyDatabase();
    const results = await Promise.all(Array.from({ length: 5 }, () => store(url).migrate()));
    expect(results.map((r) => r.applied).sort()).toEqual([[], [], [], [], [1, 2, 3]]);
    expect((await schemaOf(url)).versions).toEqual(VERSIONS);
  });

  it("bring a database of every earlier version to the latest, keeping its records", async () => {
    const latest = await emptyDatabase();
    await store(latest).migrate();
    const want = await schemaOf(latest);
    for (let k = 1; k < POSTGRES_MIGRATIONS.length; k++) {
      const url = await emptyDatabase();
      const old = store(url, {}, POSTGRES_MIGRATIONS.slice(0, k));
      await old.put(record(k));
      const upgraded = store(url);
      expect((await upgraded.migrate()).from).toBe(k);
      expect(await upgraded.get(record(k).sandboxId)).toEqual(record(k));
      expect(await schemaOf(url)).toEqual(want);
    }
  });

  it("bring a version-2 database to version 3, records and samples kept; a version-2 host works on alongside", async () => {
    const url = await emptyDatabase();
    const v2 = store(url, {}, POSTGRES_MIGRATIONS.slice(0, 2));
    expect(await v2.migrate()).toMatchObject({ to: 2 });
    await v2.put(record(1));
    await v2.runStatements([
      {
        sql: "INSERT INTO sandbox_usage VALUES (?, ?, 2, 12.5, 1, 2, 0, 3, 4)",
        params: [record(1).sandboxId, "2026-11-21T10:00:00Z"],
      },
    ]);
    const v3 = store(url);
    expect(await v3.migrate()).toEqual({ from: 2, to: 3, applied: [3], ahead: false });
    expect(await v3.get(record(1).sandboxId)).toEqual(record(1));
    expect(
      await v3.runStatements([{ sql: "SELECT count(*)::int AS n FROM sandbox_usage", params: [] }]),
    ).toEqual([[{ n: 1 }]]);
    const pause = lifecycle(record(1).sandboxId, "paused", 1);
    expect(await v3.putEvent(pause)).toBe("inserted");
    expect(await v3.putEvent(pause)).toBe("exists");
    expect(await v3.events(pause.sandboxId)).toEqual([pause]);
    // The version-2 host, started again (a rollout not finished), finds a newer schema and goes on.
    const stillV2 = store(url, {}, POSTGRES_MIGRATIONS.slice(0, 2));
    expect(await stillV2.migrate()).toMatchObject({ from: 3, applied: [], ahead: true });
    expect(await stillV2.put(record(2))).toBe("inserted");
    expect((await v3.query({})).records.map((r) => r.sandboxId)).toEqual(
      [record(2), record(1)].map((r) => r.sandboxId),
    );
  });

  it("apply only what a newer release adds; the previous release keeps working on the newer database", async () => {
    const url = await emptyDatabase();
    const v1 = store(url, {}, [...POSTGRES_MIGRATIONS]);
    await v1.put(record(1));
    const next = POSTGRES_MIGRATIONS.length + 1;
    const added: Migration = {
      version: next,
      name: "test_pod_index",
      statements: ["CREATE INDEX sandbox_history_pod ON sandbox_history (pod)"],
    };
    const v2 = store(url, {}, [...POSTGRES_MIGRATIONS, added]);
    expect(await v2.migrate()).toEqual({ from: next - 1, to: next, applied: [next], ahead: false });
    expect(await v2.get(record(1).sandboxId)).toEqual(record(1));
    // A host of the previous release, restarted (a rollback), runs on the newer schema.
    const rolledBack = store(url, {}, [...POSTGRES_MIGRATIONS]);
    expect(await rolledBack.migrate()).toMatchObject({ from: next, applied: [], ahead: true });
    expect(await rolledBack.put(record(2))).toBe("inserted");
  });

  it("refuse a database whose version has another name: a fault, said loudly, not a wait", async () => {
    const url = await emptyDatabase();
    await store(url, {}, [
      { version: 1, name: "something_else", statements: ["CREATE TABLE x (y int)"] },
    ]).migrate();
    const refused = store(url).migrate();
    await expect(refused).rejects.toThrow(
      /schema version 1 is "something_else", this host's is "sandbox_history"/,
    );
    await expect(refused).rejects.not.toBeInstanceOf(HistoryUnavailable);
  });
});
