import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { type Migration, POSTGRES_MIGRATIONS } from "../../lib/history/postgres-sql.ts";
import { SCHEMA } from "../../lib/history/sql.ts";
import { HistoryUnavailable } from "../../lib/history/store.ts";
import { closeAfterEach, emptyDatabase, schemaOf, store } from "./postgres-support.ts";
import { record } from "./records.ts";

// The PostgreSQL history's versioned migrations, applied at start: from an empty database, from
// every earlier version, by hosts starting at once, and by hosts of two releases.

closeAfterEach();

describe("the PostgreSQL history's migrations", () => {
  it("bring an empty database to the latest version: SQLite's table and indexes, bytewise text", async () => {
    const url = await emptyDatabase();
    expect(await store(url).migrate()).toEqual({ from: 0, to: 1, applied: [1], ahead: false });
    const schema = await schemaOf(url);
    expect(schema.versions).toEqual([{ version: 1, name: "sandbox_history" }]);
    expect(schema.indexes.map((i) => i.indexname)).toEqual([
      "agentbox_history_schema_pkey",
      "sandbox_history_namespace_time",
      "sandbox_history_owner_time",
      "sandbox_history_pkey",
      "sandbox_history_pool_time",
      "sandbox_history_team_time",
      "sandbox_history_time",
      "sandbox_history_user_time",
    ]);
    const text = schema.columns.filter((c) => c.table_name === "sandbox_history" && c.data_type === "text");
    expect(text.map((c) => c.collation_name)).toEqual(text.map(() => "C"));
    // A second start finds nothing to do.
    expect(await store(url).migrate()).toEqual({ from: 1, to: 1, applied: [], ahead: false });
  });

  it("begin with SQLite's SCHEMA translated: the same columns, nullability and indexes", async () => {
    const url = await emptyDatabase();
    await store(url, {}, POSTGRES_MIGRATIONS.slice(0, 1)).migrate();
    const { columns, indexes } = await schemaOf(url);
    const sqlite = new DatabaseSync(":memory:");
    for (const s of SCHEMA) sqlite.exec(s);
    const TYPES: Record<string, string> = { TEXT: "text", INTEGER: "integer", REAL: "double precision" };
    const want = sqlite
      .prepare("PRAGMA table_info(sandbox_history)")
      .all()
      .map((c) => ({ name: c.name, type: TYPES[String(c.type)], nullable: !c.notnull && !c.pk }));
    // The column list of each index, quotes and the schema name aside.
    const keys = (sql: string) =>
      sql.replace(/"/g, "").replace(/^.* ON (public\.)?sandbox_history (USING btree )?/, "");
    const wantIndexes = sqlite
      .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
      .all()
      .map((i) => ({ name: i.name, keys: keys(String(i.sql)) }));
    sqlite.close();
    expect(
      columns
        .filter((c) => c.table_name === "sandbox_history")
        .map((c) => ({ name: c.column_name, type: c.data_type, nullable: c.is_nullable === "YES" })),
    ).toEqual(want);
    expect(
      indexes
        .filter((i) => /^sandbox_history_(?!pkey)/.test(i.indexname))
        .map((i) => ({ name: i.indexname, keys: keys(i.indexdef) })),
    ).toEqual(wantIndexes);
  });

  it("apply each version once when several hosts start at once", async () => {
    const url = await emptyDatabase();
    const results = await Promise.all(Array.from({ length: 5 }, () => store(url).migrate()));
    expect(results.map((r) => r.applied).sort()).toEqual([[], [], [], [], [1]]);
    expect((await schemaOf(url)).versions).toEqual([{ version: 1, name: "sandbox_history" }]);
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
