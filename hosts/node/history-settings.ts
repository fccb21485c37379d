// Where the Node host keeps its history: SQLite (AGENTBOX_HISTORY_PATH, the default) or a shared
// PostgreSQL database (AGENTBOX_HISTORY_URL and its AGENTBOX_HISTORY_* settings). Read by the
// host's configuration (config.ts), `npm start` and the CLI, so all three mean the same.
import { readFileSync } from "node:fs";
import * as v from "valibot";
import { parseWith } from "../../lib/crd/parse-with.ts";
import { type PostgresHistorySettings, SSL_MODES } from "./postgres-history.ts";

/** POSTGRES_ENV lists the PostgreSQL history's settings. */
const POSTGRES_ENV = v.object({
  AGENTBOX_HISTORY_URL: v.optional(v.string()),
  AGENTBOX_HISTORY_URL_FILE: v.optional(v.string()),
  AGENTBOX_HISTORY_SSLMODE: v.optional(
    v.picklist(SSL_MODES, `must be one of ${SSL_MODES.join(", ")}`),
    "verify-full",
  ),
  AGENTBOX_HISTORY_CA_FILE: v.optional(v.string()),
  AGENTBOX_HISTORY_POOL_SIZE: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d{1,9}$/, "must be a whole number"),
      v.transform(Number),
      v.minValue(1, "must be at least 1"),
      v.maxValue(100, "must be at most 100"),
    ),
    "5",
  ),
  AGENTBOX_HISTORY_TIMEOUT_SECONDS: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d{1,9}(\.\d+)?$/, "must be a number of seconds"),
      v.transform(Number),
      v.check((n) => n > 0, "must be more than 0"),
      v.maxValue(60, "must be at most 60"),
    ),
    "5",
  ),
});

/** URL_TLS_PARAMETERS are the driver's own TLS parameters, which do not mean what libpq's do. */
const URL_TLS_PARAMETERS = [
  "ssl",
  "sslmode",
  "sslrootcert",
  "sslcert",
  "sslkey",
  "sslpassword",
  "uselibpqcompat",
];

type Result<T> = { ok: true; value: T } | { ok: false; errors: string[] };

/**
 * readPostgresHistory reads the PostgreSQL history's settings: undefined when neither
 * AGENTBOX_HISTORY_URL nor AGENTBOX_HISTORY_URL_FILE is set (the host keeps SQLite). The URL
 * (it holds the password) may come from a file, and is never echoed in an error. TLS is
 * AGENTBOX_HISTORY_SSLMODE (libpq's modes; default verify-full) and AGENTBOX_HISTORY_CA_FILE, not
 * URL parameters: the driver reads those its own way (sslmode=require verifies the server).
 */
export function readPostgresHistory(
  env: Record<string, string | undefined>,
): Result<PostgresHistorySettings | undefined> {
  const parsed = parseWith(POSTGRES_ENV, env);
  if (!parsed.ok) return { ok: false, errors: parsed.issues.map((i) => `${i.path}: ${i.message}`) };
  const e = parsed.value;
  const errors: string[] = [];
  let url = e.AGENTBOX_HISTORY_URL;
  if (url === undefined && e.AGENTBOX_HISTORY_URL_FILE) {
    const read = readText("AGENTBOX_HISTORY_URL_FILE", e.AGENTBOX_HISTORY_URL_FILE);
    if (!read.ok) return read;
    url = read.value;
  }
  if (url === undefined) {
    const stray = Object.keys(POSTGRES_ENV.entries).filter((k) => env[k] !== undefined);
    return stray.length === 0
      ? { ok: true, value: undefined }
      : { ok: false, errors: stray.map((k) => `${k}: needs AGENTBOX_HISTORY_URL`) };
  }
  const name = e.AGENTBOX_HISTORY_URL === undefined ? "AGENTBOX_HISTORY_URL_FILE" : "AGENTBOX_HISTORY_URL";
  errors.push(...checkUrl(url).map((m) => `${name}: ${m}`));
  if (env.AGENTBOX_HISTORY_URL !== undefined && env.AGENTBOX_HISTORY_URL_FILE !== undefined)
    errors.push("AGENTBOX_HISTORY_URL_FILE: set one of AGENTBOX_HISTORY_URL and AGENTBOX_HISTORY_URL_FILE");
  if (env.AGENTBOX_HISTORY_PATH !== undefined)
    errors.push("AGENTBOX_HISTORY_PATH: is the SQLite history; unset it to keep the history in PostgreSQL");
  let ca: string | undefined;
  if (e.AGENTBOX_HISTORY_CA_FILE !== undefined) {
    if (!e.AGENTBOX_HISTORY_SSLMODE.startsWith("verify-"))
      errors.push("AGENTBOX_HISTORY_CA_FILE: needs AGENTBOX_HISTORY_SSLMODE verify-ca or verify-full");
    const read = readText("AGENTBOX_HISTORY_CA_FILE", e.AGENTBOX_HISTORY_CA_FILE);
    if (!read.ok) errors.push(...read.errors);
    else if (!read.value.includes("-----BEGIN CERTIFICATE-----"))
      errors.push(`AGENTBOX_HISTORY_CA_FILE: ${e.AGENTBOX_HISTORY_CA_FILE} holds no PEM certificate`);
    else ca = read.value;
  }
  if (errors.length) return { ok: false, errors };
  return {
    ok: true,
    value: {
      url,
      sslmode: e.AGENTBOX_HISTORY_SSLMODE,
      ...(ca ? { ca } : {}),
      poolSize: e.AGENTBOX_HISTORY_POOL_SIZE,
      timeoutMs: Math.round(e.AGENTBOX_HISTORY_TIMEOUT_SECONDS * 1000),
    },
  };
}

/** checkUrl says what is wrong with a PostgreSQL URL, without repeating it (it holds a password). */
function checkUrl(url: string): string[] {
  if (!URL.canParse(url)) return ["must be a URL such as postgres://user:password@host:5432/database"];
  const u = new URL(url);
  if (u.protocol !== "postgres:" && u.protocol !== "postgresql:")
    return ["must be a postgres:// or postgresql:// URL"];
  const problems: string[] = [];
  if (!u.hostname && !u.searchParams.get("host")) problems.push("names no host");
  const tls = URL_TLS_PARAMETERS.filter((p) => u.searchParams.has(p));
  if (tls.length)
    problems.push(
      `carries ${tls.join(", ")}: set TLS with AGENTBOX_HISTORY_SSLMODE and AGENTBOX_HISTORY_CA_FILE instead`,
    );
  return problems;
}

/** readText reads a setting's file, trimmed, or says (by the setting's name) why it cannot. */
function readText(name: string, file: string): Result<string> {
  try {
    const text = readFileSync(file, "utf8").trim();
    return text ? { ok: true, value: text } : { ok: false, errors: [`${name}: ${file} is empty`] };
  } catch (err) {
    return {
      ok: false,
      errors: [`${name}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? "error"})`],
    };
  }
}
