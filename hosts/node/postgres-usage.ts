import { MAX_PARAMS } from "../../lib/usage/sql.ts";
import { SqlUsageStore } from "../../lib/usage/sql-store.ts";
import { USAGE_SAMPLES_PER_SANDBOX } from "../../lib/usage/thin.ts";
import type { PostgresHistoryStore } from "./postgres-history.ts";

/**
 * postgresUsage is the usage store of Node hosts sharing one PostgreSQL database: the history's
 * database, pool, migrations (version 2 is the usage tables), timeouts and error mapping (a
 * database that cannot answer now is HistoryUnavailable), so one setting and one pool serve both.
 * Its statements run one after the other, not in a transaction: the store's order keeps a series
 * consistent whichever statement a failure stops at.
 */
export function postgresUsage(history: PostgresHistoryStore, cap = USAGE_SAMPLES_PER_SANDBOX): SqlUsageStore {
  return new SqlUsageStore(history.runStatements, { cap, maxParams: MAX_PARAMS.postgres });
}
