import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** MIGRATIONS is the Worker's D1 migrations directory (wrangler.toml migrations_dir). */
const MIGRATIONS = "infra/worker/migrations";

/**
 * migrationStatements lists the statements of every D1 migration in the order wrangler applies
 * them (by file name), comment lines removed: what `wrangler d1 migrations apply` runs.
 */
export function migrationStatements(): string[] {
  return readdirSync(MIGRATIONS)
    .filter((f) => f.endsWith(".sql"))
    .sort()
    .flatMap((f) =>
      readFileSync(join(MIGRATIONS, f), "utf8")
        .split("\n")
        .filter((l) => !l.startsWith("--"))
        .join("\n")
        .split(";")
        .map((s) => s.trim())
        .filter(Boolean),
    );
}
