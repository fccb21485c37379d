import { MAX_PARAMS } from "../../lib/usage/sql.ts";
import { SqlUsageStore } from "../../lib/usage/sql-store.ts";
import { USAGE_SAMPLES_PER_SANDBOX } from "../../lib/usage/thin.ts";
import { type D1Like, migrated } from "./d1-history.ts";

/**
 * D1UsageStore is the Worker's usage store, in the history's D1 database: the shared statements
 * of lib/usage/sql.ts, each call's statements in one batch (one round trip, one transaction). It
 * runs no DDL: the tables are D1's migrations (infra/worker/migrations/0003), as the history's are,
 * and a database without them gets an error that names the command.
 */
export class D1UsageStore extends SqlUsageStore {
  constructor(db: D1Like, cap = USAGE_SAMPLES_PER_SANDBOX) {
    super(
      async (statements) => {
        const bound = statements.map((s) => db.prepare(s.sql).bind(...s.params));
        const results = await migrated(db.batch(bound), "sandbox_usage");
        return results.map((r) => r.results);
      },
      { cap, maxParams: MAX_PARAMS.d1 },
    );
  }
}
