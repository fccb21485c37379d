import { rfc3339 } from "../util/time.ts";
import type { UsageSample } from "./sample.ts";
import {
  countSeries,
  dropSamples,
  forgetSeries,
  fromUsageRow,
  type Inserted,
  insertSamples,
  OLD_SERIES,
  overCap,
  SERIES_TIMES,
  type SeriesCount,
  type Statement,
  selectRange,
  touchSeries,
  type UsageRow,
} from "./sql.ts";
import type { UsageRange, UsageStore } from "./store.ts";
import { thinSeries, USAGE_SAMPLES_PER_SANDBOX } from "./thin.ts";

/**
 * RunStatements runs statements in order on one database and answers each one's rows (none for
 * a statement that returns none). A backend may run them in one transaction (SQLite, D1's batch)
 * or one after the other (PostgreSQL's pool): the store's order makes either safe. A database
 * that cannot answer now throws HistoryUnavailable.
 */
export type RunStatements = (statements: readonly Statement[]) => Promise<Record<string, unknown>[][]>;

/**
 * THIN_PER_PUT bounds the series one put thins (the most over their cap first): sandboxes claimed
 * in one burst pass their caps in one put, and thinning them all at once would hold that put, and
 * the sampler, for seconds. The others are over their cap at the next puts and thinned then: a
 * series passes its cap by a few samples for a few puts at most, and ranges never answer more
 * than the cap.
 */
export const THIN_PER_PUT = 32;

/**
 * FORGET_PER_STATEMENT bounds the series one statement of forget drops (at most the cap's samples
 * each; within D1's 100 parameters): a day's ended sandboxes are forgotten in many short
 * statements, not one that outlasts the database's timeout or holds SQLite's write lock for seconds.
 */
export const FORGET_PER_STATEMENT = 64;

/**
 * SqlUsageStore is the usage store over the shared SQL of ./sql.ts, whichever database runs it
 * (the backends in hosts/ hand it their way of running statements). A put is cheap: the series
 * rows touched, the samples inserted in multi-row statements keeping what is already there, the
 * new ones counted into their series; only a series that passed `cap` is read back and thinned
 * (thinSeries decides which samples go), after which it holds at most 3/4 of the cap.
 */
export class SqlUsageStore implements UsageStore {
  private readonly run: RunStatements;
  /** cap is the samples kept per sandbox (USAGE_SAMPLES_PER_SANDBOX unless a test says otherwise). */
  readonly cap: number;
  /** maxParams is the database's limit of bound parameters per statement (MAX_PARAMS). */
  private readonly maxParams: number;

  constructor(run: RunStatements, options: { maxParams: number; cap?: number | undefined }) {
    this.cap = options.cap ?? USAGE_SAMPLES_PER_SANDBOX;
    thinSeries([], this.cap); // refuses a cap thinning cannot keep
    this.run = run;
    this.maxParams = options.maxParams;
  }

  async put(given: readonly UsageSample[]): Promise<void> {
    if (given.length === 0) return;
    const samples = given.map((s, i) => ({ ...s, at: second(s.at, `samples[${i}].at`, "floor") }));
    const inserts = insertSamples(samples, this.maxParams);
    const written = await this.run([...touchSeries(samples, this.maxParams), ...inserts]);
    const inserted = written.slice(-inserts.length).flat() as Inserted[];
    if (inserted.length === 0) return;
    const counts = (await this.run(countSeries(inserted, this.maxParams))).flat() as SeriesCount[];
    for (const sandboxId of overCap(counts, this.cap, THIN_PER_PUT)) await this.thin(sandboxId);
  }

  /** thin drops what thinSeries decides from one series that passed the cap. */
  private async thin(sandboxId: string): Promise<void> {
    const [rows = []] = await this.run([{ sql: SERIES_TIMES, params: [sandboxId] }]);
    const drop = thinSeries(
      rows.map((r) => String(r.at)),
      this.cap,
    );
    // Nothing to drop (another host thinned it meanwhile): the count is still set to what is there.
    await this.run(dropSamples(sandboxId, drop, this.maxParams));
  }

  async range(sandboxId: string, range: UsageRange): Promise<UsageSample[]> {
    const bounds = {
      ...range,
      ...(range.from === undefined ? {} : { from: second(range.from, "from", "ceil") }),
      ...(range.to === undefined ? {} : { to: second(range.to, "to", "floor") }),
    };
    const [rows = []] = await this.run([selectRange(sandboxId, bounds, this.cap)]);
    const samples = (rows as UsageRow[]).map(fromUsageRow);
    return range.newest ? samples.reverse() : samples;
  }

  async forget(before: string): Promise<number> {
    const bound = second(before, "before", "ceil");
    const [old = []] = await this.run([{ sql: OLD_SERIES, params: [bound] }]);
    let forgotten = 0;
    // A run, and a transaction, per FORGET_PER_STATEMENT series: each is quick, however many go.
    for (const pair of forgetSeries(
      old.map((r) => String(r.sandbox_id)),
      bound,
      FORGET_PER_STATEMENT,
    ))
      forgotten += (await this.run(pair))[1]?.length ?? 0;
    return forgotten;
  }
}

/**
 * second writes a time as the store keeps them (RFC 3339 in UTC, whole seconds: text that sorts
 * as time does), rounded down or up: whatever form a caller gives ("+02:00", milliseconds), a
 * bound selects the same stored samples, and a sample taken twice within a second is one.
 */
function second(at: string, field: string, round: "floor" | "ceil"): string {
  const ms = Date.parse(at);
  if (Number.isNaN(ms)) throw new RangeError(`${field}: not an RFC 3339 time: ${JSON.stringify(at)}`);
  return rfc3339(new Date((round === "floor" ? Math.floor : Math.ceil)(ms / 1000) * 1000));
}
