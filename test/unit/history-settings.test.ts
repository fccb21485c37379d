import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readHostEnv } from "../../hosts/node/config.ts";
import { readPostgresHistory } from "../../hosts/node/history-settings.ts";

// AGENTBOX_HISTORY_URL and its settings: PostgreSQL when set, SQLite otherwise; errors name the
// setting and never repeat the URL (it holds the password).

const URL_ = "postgres://agentbox:s3cret@db.example.com:5432/agentbox";
const dir = mkdtempSync(join(tmpdir(), "history-settings-"));
const file = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};

describe("readPostgresHistory", () => {
  it("keeps SQLite when no URL is set", () => {
    expect(readPostgresHistory({})).toEqual({ ok: true, value: undefined });
    expect(readPostgresHistory({ AGENTBOX_HISTORY_PATH: "/data/h.sqlite" })).toEqual({
      ok: true,
      value: undefined,
    });
  });

  it("applies the defaults: verify-full, 5 connections per pool, 5 s per query", () => {
    expect(readPostgresHistory({ AGENTBOX_HISTORY_URL: URL_ })).toEqual({
      ok: true,
      value: { url: URL_, sslmode: "verify-full", poolSize: 5, timeoutMs: 5000 },
    });
  });

  it("reads the URL from a file, the CA from a file, the pool size and the timeout", () => {
    const ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
    expect(
      readPostgresHistory({
        AGENTBOX_HISTORY_URL_FILE: file("url", `${URL_}\n`),
        AGENTBOX_HISTORY_SSLMODE: "verify-ca",
        AGENTBOX_HISTORY_CA_FILE: file("ca.pem", ca),
        AGENTBOX_HISTORY_POOL_SIZE: "20",
        AGENTBOX_HISTORY_TIMEOUT_SECONDS: "2.5",
      }),
    ).toEqual({ ok: true, value: { url: URL_, sslmode: "verify-ca", ca, poolSize: 20, timeoutMs: 2500 } });
  });

  it("names each wrong setting, and never repeats the URL", () => {
    const cases: [Record<string, string>, string][] = [
      [
        { AGENTBOX_HISTORY_URL: "mysql://u:s3cret@h/db" },
        "AGENTBOX_HISTORY_URL: must be a postgres:// or postgresql:// URL",
      ],
      [{ AGENTBOX_HISTORY_URL: "s3cret not a url" }, "AGENTBOX_HISTORY_URL: must be a URL such as"],
      [
        { AGENTBOX_HISTORY_URL: `${URL_}?sslmode=require` },
        "AGENTBOX_HISTORY_URL: carries sslmode: set TLS with AGENTBOX_HISTORY_SSLMODE",
      ],
      [
        { AGENTBOX_HISTORY_URL: URL_, AGENTBOX_HISTORY_SSLMODE: "prefer" },
        "AGENTBOX_HISTORY_SSLMODE: must be one of disable, require, verify-ca, verify-full",
      ],
      [
        { AGENTBOX_HISTORY_URL: URL_, AGENTBOX_HISTORY_POOL_SIZE: "0" },
        "AGENTBOX_HISTORY_POOL_SIZE: must be at least 1",
      ],
      [
        { AGENTBOX_HISTORY_URL: URL_, AGENTBOX_HISTORY_POOL_SIZE: "2.5" },
        "AGENTBOX_HISTORY_POOL_SIZE: must be a whole number",
      ],
      [
        { AGENTBOX_HISTORY_URL: URL_, AGENTBOX_HISTORY_TIMEOUT_SECONDS: "0" },
        "AGENTBOX_HISTORY_TIMEOUT_SECONDS: must be more than 0",
      ],
      [
        { AGENTBOX_HISTORY_URL: URL_, AGENTBOX_HISTORY_TIMEOUT_SECONDS: "600" },
        "AGENTBOX_HISTORY_TIMEOUT_SECONDS: must be at most 60",
      ],
      [
        { AGENTBOX_HISTORY_URL: URL_, AGENTBOX_HISTORY_CA_FILE: join(dir, "none.pem") },
        "AGENTBOX_HISTORY_CA_FILE: cannot read",
      ],
      [
        { AGENTBOX_HISTORY_URL: URL_, AGENTBOX_HISTORY_CA_FILE: file("bad.pem", "junk") },
        "AGENTBOX_HISTORY_CA_FILE: ",
      ],
      [
        {
          AGENTBOX_HISTORY_URL: URL_,
          AGENTBOX_HISTORY_SSLMODE: "require",
          AGENTBOX_HISTORY_CA_FILE: file("c.pem", "x"),
        },
        "AGENTBOX_HISTORY_CA_FILE: needs AGENTBOX_HISTORY_SSLMODE verify-ca or verify-full",
      ],
      [
        { AGENTBOX_HISTORY_URL: URL_, AGENTBOX_HISTORY_PATH: "/data/h.sqlite" },
        "AGENTBOX_HISTORY_PATH: is the SQLite history",
      ],
      [{ AGENTBOX_HISTORY_URL_FILE: join(dir, "nope") }, "AGENTBOX_HISTORY_URL_FILE: cannot read"],
      [{ AGENTBOX_HISTORY_POOL_SIZE: "3" }, "AGENTBOX_HISTORY_POOL_SIZE: needs AGENTBOX_HISTORY_URL"],
    ];
    for (const [env, error] of cases) {
      const r = readPostgresHistory(env);
      expect(r.ok, error).toBe(false);
      const errors = r.ok ? [] : r.errors;
      expect(errors.join("\n"), error).toContain(error);
      expect(errors.join("\n")).not.toContain("s3cret");
    }
  });
});

describe("readHostEnv", () => {
  it("selects PostgreSQL with AGENTBOX_HISTORY_URL and reports its errors with the rest", () => {
    const valid = {
      AGENTBOX_TLS_CERT: "/tls/tls.crt",
      AGENTBOX_TLS_KEY: "/tls/tls.key",
      AGENTBOX_CALLBACK_TOKEN: "a".repeat(24),
      AGENTBOX_ADMIN_TOKEN: "b".repeat(24),
    };
    const r = readHostEnv({ ...valid, AGENTBOX_HISTORY_URL: URL_, AGENTBOX_HISTORY_SSLMODE: "require" });
    expect(r.ok && r.value.historyDatabase).toEqual({
      url: URL_,
      sslmode: "require",
      poolSize: 5,
      timeoutMs: 5000,
    });
    expect(readHostEnv(valid).ok && "historyDatabase" in readHostEnv(valid)).toBe(false);
    const bad = readHostEnv({ ...valid, AGENTBOX_HISTORY_URL: URL_, AGENTBOX_HISTORY_POOL_SIZE: "x" });
    expect(bad).toEqual({ ok: false, errors: ["AGENTBOX_HISTORY_POOL_SIZE: must be a whole number"] });
  });
});
