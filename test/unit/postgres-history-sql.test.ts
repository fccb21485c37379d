import type { ConnectionOptions } from "node:tls";
import { describe, expect, it } from "vitest";
import { sslOptions } from "../../hosts/node/postgres-history.ts";
import {
  isTransientPostgresError,
  POSTGRES_MIGRATIONS,
  pendingMigrations,
  toPostgres,
} from "../../lib/history/postgres-sql.ts";
import { INSERT, selectQuery } from "../../lib/history/sql.ts";

// PostgreSQL's differences from the shared history SQL, as plain functions.

describe("toPostgres", () => {
  it("numbers the shared statements' placeholders in order", () => {
    const { sql, params } = selectQuery({ team: "a", user: "u", from: "x", after: btoa('["t","id"]') });
    const numbered = toPostgres(sql);
    expect(numbered).toContain('team = $1 AND "user" = $2 AND terminated_at >= $3');
    expect(numbered).toContain("(terminated_at, sandbox_id) < ($4, $5)");
    expect(numbered).not.toContain("?");
    expect(params).toHaveLength(5);
    expect(toPostgres(INSERT)).toMatch(/VALUES \(\$1, \$2, .*\$18\) ON CONFLICT \(sandbox_id\) DO NOTHING$/);
  });
});

describe("isTransientPostgresError", () => {
  it("tells a database that cannot answer now from a fault", () => {
    const transient = [
      Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }),
      Object.assign(new AggregateError([Object.assign(new Error("x"), { code: "ECONNREFUSED" })], ""), {}),
      Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" }),
      Object.assign(new Error("canceling statement due to statement timeout"), { code: "57014" }),
      Object.assign(new Error("sorry, too many clients already"), { code: "53300" }),
      Object.assign(new Error("the database system is starting up"), { code: "57P03" }),
      Object.assign(new Error("could not serialize access"), { code: "40001" }),
      Object.assign(new Error("connection failure"), { code: "08006" }),
      new Error("timeout exceeded when trying to connect"),
      new Error("Connection terminated unexpectedly"),
      new Error("Query read timeout"),
    ];
    const faults = [
      Object.assign(new Error("password authentication failed for user x"), { code: "28P01" }),
      Object.assign(new Error('database "x" does not exist'), { code: "3D000" }),
      Object.assign(new Error('relation "x" does not exist'), { code: "42P01" }),
      Object.assign(new Error("self-signed certificate in certificate chain"), {
        code: "SELF_SIGNED_CERT_IN_CHAIN",
      }),
      new TypeError("x is not a function"),
      "a string",
      undefined,
    ];
    expect(transient.map(isTransientPostgresError)).toEqual(transient.map(() => true));
    expect(faults.map(isTransientPostgresError)).toEqual(faults.map(() => false));
  });
});

describe("pendingMigrations", () => {
  const known = [
    { version: 1, name: "one", statements: [] },
    { version: 2, name: "two", statements: [] },
  ];
  it("lists the versions a database lacks, in order, and none for one ahead", () => {
    expect(pendingMigrations([], known).map((m) => m.version)).toEqual([1, 2]);
    expect(pendingMigrations([{ version: 1, name: "one" }], known).map((m) => m.version)).toEqual([2]);
    const ahead = [
      { version: 1, name: "one" },
      { version: 2, name: "two" },
      { version: 3, name: "three" },
    ];
    expect(pendingMigrations(ahead, known)).toEqual([]);
  });
  it("refuses a version known by another name", () => {
    expect(() => pendingMigrations([{ version: 1, name: "uno" }], known)).toThrow(/version 1 is "uno"/);
  });
  it("the schema's versions are 1, 2, ... with distinct names", () => {
    expect(POSTGRES_MIGRATIONS.map((m) => m.version)).toEqual(POSTGRES_MIGRATIONS.map((_, i) => i + 1));
    expect(new Set(POSTGRES_MIGRATIONS.map((m) => m.name)).size).toBe(POSTGRES_MIGRATIONS.length);
  });
});

describe("sslOptions", () => {
  it("gives each sslmode libpq's meaning", () => {
    expect(sslOptions({ sslmode: "disable" })).toBe(false);
    expect(sslOptions({ sslmode: "require" })).toEqual({ rejectUnauthorized: false });
    expect(sslOptions({ sslmode: "verify-full", ca: "PEM" })).toEqual({
      ca: "PEM",
      rejectUnauthorized: true,
    });
    expect(sslOptions({ sslmode: "verify-full" })).toEqual({ rejectUnauthorized: true });
    const verifyCa = sslOptions({ sslmode: "verify-ca", ca: "PEM" }) as ConnectionOptions;
    expect(verifyCa).toMatchObject({ ca: "PEM", rejectUnauthorized: true });
    // The chain is checked, the name is not.
    expect(verifyCa.checkServerIdentity?.("other.example", {} as never)).toBeUndefined();
  });
});
