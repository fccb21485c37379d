// The usage store's schema and statements, shared by every backend (SQLite in Node, D1 in
// Workers, PostgreSQL with its placeholders numbered by lib/history/postgres-sql.ts toPostgres),
// as lib/history/sql.ts is for the history: the same SQL text runs in all three, in the history's
// database. Two tables: the samples, keyed (sandbox_id, at), and one row per sandbox's series
// (how many samples it holds, its newest), so a put learns cheaply when a series passes its cap
// and retention finds old series without reading the samples.
import type { UsageSample } from "./sample.ts";
import type { UsageRange } from "./store.ts";

/**
 * USAGE_SCHEMA creates the two tables (idempotent: IF NOT EXISTS). Samples are clustered by
 * their key (WITHOUT ROWID: a series is read, thinned and dropped in key order); the series'
 * index on last_at is what retention reads. Times are RFC 3339 text, compared as text, as the
 * history's are. The Worker's D1 gets the same schema from infra/worker/migrations (a unit test
 * keeps them equal); PostgreSQL from version 2 of lib/history/postgres-sql.ts POSTGRES_MIGRATIONS.
 */
export const USAGE_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS sandbox_usage (
    sandbox_id TEXT NOT NULL,
    at TEXT NOT NULL,
    cpu_count INTEGER NOT NULL,
    cpu_used_pct REAL NOT NULL,
    mem_used REAL NOT NULL,
    mem_total REAL NOT NULL,
    mem_cache REAL NOT NULL,
    disk_used REAL NOT NULL,
    disk_total REAL NOT NULL,
    PRIMARY KEY (sandbox_id, at)
  ) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS sandbox_usage_series (
    sandbox_id TEXT PRIMARY KEY,
    samples INTEGER NOT NULL,
    last_at TEXT NOT NULL
  )`,
  "CREATE INDEX IF NOT EXISTS sandbox_usage_series_last ON sandbox_usage_series (last_at)",
];

type SqlValue = string | number | null;

/** Statement is one SQL text and its parameters. */
export interface Statement {
  sql: string;
  params: SqlValue[];
}

/**
 * MAX_PARAMS are the bound parameters one statement may have in each database (D1's 100 is the
 * smallest): a batch is written in as few statements as its database allows.
 */
export const MAX_PARAMS = { d1: 100, sqlite: 32_766, postgres: 65_535 } as const;

const COLUMNS =
  "sandbox_id, at, cpu_count, cpu_used_pct, mem_used, mem_total, mem_cache, disk_used, disk_total";
const PER_SAMPLE = 9;

/** chunks splits items into runs of at most `size`. */
function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const placeholders = (rows: number, perRow: number) =>
  Array.from({ length: rows }, () => `(${Array(perRow).fill("?").join(", ")})`).join(", ");

/**
 * insertSamples writes samples as multi-row inserts (as many rows as `max` parameters allow), in
 * key order, keeping a sample already stored at the same (sandbox, at): each returns the rows it
 * inserted, which is what the series' counts add.
 */
export function insertSamples(samples: readonly UsageSample[], max: number): Statement[] {
  const ordered = [...samples].sort((a, b) => compare(a.sandboxId, b.sandboxId) || compare(a.at, b.at));
  return chunks(ordered, Math.floor(max / PER_SAMPLE)).map((rows) => ({
    sql: `INSERT INTO sandbox_usage (${COLUMNS}) VALUES ${placeholders(rows.length, PER_SAMPLE)} ON CONFLICT (sandbox_id, at) DO NOTHING RETURNING sandbox_id, at`,
    params: rows.flatMap((s) => [
      s.sandboxId,
      s.at,
      s.cpuCount,
      s.cpuUsedPct,
      s.memUsed,
      s.memTotal,
      s.memCache,
      s.diskUsed,
      s.diskTotal,
    ]),
  }));
}

/** Inserted is a row insertSamples returned: a sample newly stored. */
export type Inserted = { sandbox_id: SqlValue; at: SqlValue };

/**
 * seriesRows upserts series rows: `samples` more in each, its newest time moved forward (the CASE
 * is the two-argument max both dialects know: SQLite's max(a, b), PostgreSQL's GREATEST). Rows go
 * in sandbox order, as insertSamples' do, so hosts writing the same series at once lock their
 * rows in one order and never deadlock.
 */
function seriesRows(series: Map<string, { samples: number; last: string }>, max: number): Statement[] {
  const ordered = [...series].sort(([a], [b]) => compare(a, b));
  return chunks(ordered, Math.floor(max / 3)).map((rows) => ({
    sql: `INSERT INTO sandbox_usage_series (sandbox_id, samples, last_at) VALUES ${placeholders(rows.length, 3)}
ON CONFLICT (sandbox_id) DO UPDATE SET samples = sandbox_usage_series.samples + excluded.samples,
  last_at = CASE WHEN excluded.last_at > sandbox_usage_series.last_at THEN excluded.last_at ELSE sandbox_usage_series.last_at END
RETURNING sandbox_id, samples`,
    params: rows.flatMap(([id, s]) => [id, s.samples, s.last]),
  }));
}

/** bySeries groups (sandbox, at) pairs into per-series counts and newest times. */
function bySeries(pairs: Iterable<[string, string]>, counted: boolean) {
  const series = new Map<string, { samples: number; last: string }>();
  for (const [id, at] of pairs) {
    const s = series.get(id);
    if (!s) series.set(id, { samples: counted ? 1 : 0, last: at });
    else {
      if (counted) s.samples++;
      if (at > s.last) s.last = at;
    }
  }
  return series;
}

/**
 * touchSeries makes sure each sample's series has its row, its newest time moved forward, before
 * the samples are written: a host that dies between the two leaves a series row without samples
 * (which retention drops), never samples that no series row, and so no retention, knows of.
 */
export const touchSeries = (samples: readonly UsageSample[], max: number): Statement[] =>
  seriesRows(
    bySeries(
      samples.map((s) => [s.sandboxId, s.at]),
      false,
    ),
    max,
  );

/**
 * countSeries adds the newly stored samples (insertSamples' rows) to their series' counts; each
 * statement returns the series' new counts, so the store thins exactly the series that passed the
 * cap.
 */
export const countSeries = (inserted: readonly Inserted[], max: number): Statement[] =>
  seriesRows(
    bySeries(
      inserted.map((r) => [String(r.sandbox_id), String(r.at)]),
      true,
    ),
    max,
  );

/** SeriesCount is a row countSeries returned. */
export type SeriesCount = { sandbox_id: SqlValue; samples: SqlValue };

/** overCap names the series countSeries left above the cap, at most `most`, the fullest first. */
export const overCap = (rows: readonly SeriesCount[], cap: number, most: number): string[] =>
  rows
    .filter((r) => Number(r.samples) > cap)
    .sort((a, b) => Number(b.samples) - Number(a.samples))
    .slice(0, most)
    .map((r) => String(r.sandbox_id));

/** SERIES_TIMES reads one series' times, oldest first: what thinSeries decides on. */
export const SERIES_TIMES = "SELECT at FROM sandbox_usage WHERE sandbox_id = ? ORDER BY at";

/**
 * dropSamples deletes the thinned samples of one series, then sets its count to what is left
 * (counted, not subtracted: two hosts thinning the same series at once leave the true count).
 */
export function dropSamples(sandboxId: string, ats: readonly string[], max: number): Statement[] {
  return [
    ...chunks(ats, max - 1).map((some) => ({
      sql: `DELETE FROM sandbox_usage WHERE sandbox_id = ? AND at IN (${some.map(() => "?").join(", ")})`,
      params: [sandboxId, ...some],
    })),
    {
      sql: "UPDATE sandbox_usage_series SET samples = (SELECT count(*) FROM sandbox_usage WHERE sandbox_id = ?) WHERE sandbox_id = ?",
      params: [sandboxId, sandboxId],
    },
  ];
}

/**
 * selectRange reads a sandbox's samples in [from, to], at most `limit` (1 to cap): the oldest, in
 * time order, or with `newest` the newest, newest first (the primary key (sandbox_id, at) serves
 * either order, so a latest sample is one index step; the store puts them back in time order).
 */
export function selectRange(sandboxId: string, range: UsageRange, cap: number): Statement {
  const where = ["sandbox_id = ?"];
  const params: SqlValue[] = [sandboxId];
  if (range.from !== undefined) {
    where.push("at >= ?");
    params.push(range.from);
  }
  if (range.to !== undefined) {
    where.push("at <= ?");
    params.push(range.to);
  }
  const limit = Math.min(Math.max(1, Math.trunc(range.limit ?? cap)), cap);
  return {
    sql: `SELECT ${COLUMNS} FROM sandbox_usage WHERE ${where.join(" AND ")} ORDER BY at${range.newest ? " DESC" : ""} LIMIT ${limit}`,
    params,
  };
}

/** UsageRow is a sandbox_usage row as the drivers return it. */
export type UsageRow = Record<string, SqlValue>;

/** fromUsageRow turns a row back into a sample. */
export function fromUsageRow(row: UsageRow): UsageSample {
  return {
    sandboxId: String(row.sandbox_id),
    at: String(row.at),
    cpuCount: Number(row.cpu_count),
    cpuUsedPct: Number(row.cpu_used_pct),
    memUsed: Number(row.mem_used),
    memTotal: Number(row.mem_total),
    memCache: Number(row.mem_cache),
    diskUsed: Number(row.disk_used),
    diskTotal: Number(row.disk_total),
  };
}

/** OLD_SERIES names the series whose newest sample is older than the bound: what forget drops. */
export const OLD_SERIES = "SELECT sandbox_id FROM sandbox_usage_series WHERE last_at < ?";

/**
 * forgetSeries drops old series, `per` at a time: their samples, then their rows, each row only
 * if it is still old (one statement pair per group, run together). In this order a forget that
 * stops midway leaves series rows to find next time, never samples that no row knows of, and a
 * sample put meanwhile (its row touched first, so no longer old) keeps its row. Each pair's
 * second statement names the series it dropped.
 */
export function forgetSeries(sandboxIds: readonly string[], before: string, per: number): Statement[][] {
  return chunks(sandboxIds, per).map((ids) => {
    const list = ids.map(() => "?").join(", ");
    return [
      { sql: `DELETE FROM sandbox_usage WHERE at < ? AND sandbox_id IN (${list})`, params: [before, ...ids] },
      {
        sql: `DELETE FROM sandbox_usage_series WHERE last_at < ? AND sandbox_id IN (${list}) RETURNING sandbox_id`,
        params: [before, ...ids],
      },
    ];
  });
}
