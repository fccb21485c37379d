import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it, vi } from "vitest";
import { readWorkerEnv } from "../../hosts/worker/config.ts";
import { workerDeps } from "../../hosts/worker/deps.ts";
import worker from "../../hosts/worker/index.ts";
import { SnapshotRetentionSetting } from "../../lib/claims/snapshot-retention.ts";
import { parseWith } from "../../lib/crd/parse-with.ts";
import { SCHEMA } from "../../lib/history/sql.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { ApiServerUnreachable, isConflict, isNotFound, KubeError } from "../../lib/kube/errors.ts";
import { fetchKubeTransport, fetchKubeWatch, requestUrl } from "../../lib/kube/fetch-transport.ts";
import type { WatchEvent } from "../../lib/kube/transport.ts";
import { USAGE_SCHEMA } from "../../lib/usage/sql.ts";
import { migrationStatements } from "../integration/support/d1-migrations.ts";

// The Worker's pieces that need no workerd: configuration, the fetch transport's edge cases (fed
// by plain fetch functions), the D1 migration and the runtime-neutral rule for lib/functions/webhooks.

const opts = (fetchFn: typeof fetch) => ({
  server: "https://kube.example.com/",
  token: "t0ken-secret",
  fetch: fetchFn,
});

describe("fetch transport", () => {
  it("joins server, path and defined query parameters", () => {
    expect(
      requestUrl("https://kube.example.com/", {
        method: "GET",
        path: "/api/v1/pods",
        query: { labelSelector: "a=b", limit: undefined },
      }),
    ).toBe("https://kube.example.com/api/v1/pods?labelSelector=a%3Db");
    expect(requestUrl("https://proxy.example/k8s", { method: "GET", path: "/api" }, { watch: "1" })).toBe(
      "https://proxy.example/k8s/api?watch=1",
    );
  });

  it("passes the apiserver's own answers through, with the bearer token and content type", async () => {
    let seen: RequestInit | undefined;
    const transport = fetchKubeTransport(
      opts(async (_url, init) => {
        seen = init;
        return new Response('{"kind":"Status","code":500}', { status: 500 });
      }),
    );
    const res = await transport({
      method: "PATCH",
      path: "/x",
      body: [],
      contentType: "application/json-patch+json",
    });
    expect(res).toEqual({ status: 500, body: '{"kind":"Status","code":500}' });
    expect(seen?.headers).toMatchObject({
      authorization: "Bearer t0ken-secret",
      "content-type": "application/json-patch+json",
    });
  });

  it("calls a network failure or a proxy's 5xx unreachable, naming the host and never the token", async () => {
    const refused = fetchKubeTransport(opts(async () => Promise.reject(new TypeError("connection refused"))));
    await expect(refused({ method: "GET", path: "/api" })).rejects.toThrow(ApiServerUnreachable);
    await expect(refused({ method: "GET", path: "/api" })).rejects.toThrow(
      /kube\.example\.com: connection refused/,
    );
    const tunnelDown = fetchKubeTransport(
      opts(async () => new Response("<html>530</html>", { status: 530 })),
    );
    const error = await tunnelDown({ method: "GET", path: "/api" }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(ApiServerUnreachable);
    expect(String(error)).not.toContain("t0ken");
  });

  it("streams watch events split across chunks and stops when told", async () => {
    const lines = [
      '{"type":"ADDED","object":{"n":1}}\n{"type":"MOD',
      'IFIED","object":{"n":2}}\n',
      '{"type":"DELETED","object":{}}\n',
    ];
    const body = new ReadableStream({
      start(c) {
        for (const l of lines) c.enqueue(new TextEncoder().encode(l));
        c.close();
      },
    });
    const watch = fetchKubeWatch(opts(async () => new Response(body)));
    const seen: WatchEvent[] = [];
    await watch(
      { method: "GET", path: "/api/v1/pods" },
      (e) => seen.push(e) === 2,
      new AbortController().signal,
    );
    expect(seen.map((e) => e.type)).toEqual(["ADDED", "MODIFIED"]);
  });
});

describe("typed errors through the fetch transport", () => {
  const status = (code: number, reason: string, causes?: unknown[], message = reason) =>
    JSON.stringify({ kind: "Status", code, reason, message, ...(causes ? { details: { causes } } : {}) });
  // What the apiserver says when a JSON Patch `test` fails.
  const generic = "the server rejected our request due to an error in our request";
  const client = (code: number, body: string) =>
    new KubeClient(fetchKubeTransport(opts(async () => new Response(body, { status: code }))));

  it("maps 404, 409 and a JSON Patch test failure (422 without causes) as the Node host does", async () => {
    const notFound = await client(404, status(404, "NotFound"))
      .getPod("ns", "p")
      .catch((e: unknown) => e);
    expect(isNotFound(notFound)).toBe(true);
    const conflict = await client(409, status(409, "Conflict"))
      .patchPod("ns", "p", [])
      .catch((e: unknown) => e);
    expect(isConflict(conflict)).toBe(true);
    const failedTest = await client(422, status(422, "Invalid", undefined, generic))
      .patchPod("ns", "p", [])
      .catch((e: unknown) => e);
    expect(isConflict(failedTest)).toBe(true);
    const invalid = await client(422, status(422, "Invalid", [{ field: "spec.x", message: "bad" }], generic))
      .patchPod("ns", "p", [])
      .catch((e: unknown) => e);
    expect(isConflict(invalid)).toBe(false);
    expect(invalid).toBeInstanceOf(KubeError);
  });
});

describe("Worker configuration", () => {
  const good = {
    KUBE_API_URL: "https://kube.example.com",
    KUBE_TOKEN: "token-123456",
    CALLBACK_TOKEN: "c".repeat(16),
    ADMIN_TOKEN: "a".repeat(16),
    HISTORY: { prepare: () => ({}) },
  };

  it("applies the defaults the README and wrangler.toml name (5 passes 10 s apart)", () => {
    expect(readWorkerEnv(good)).toMatchObject({
      ok: true,
      value: { TICK_PASSES: 5, TICK_SPACING_SECONDS: 10, TICK_CONCURRENCY: 8 },
    });
    const wrangler = readFileSync(new URL("../../wrangler.toml", import.meta.url), "utf8");
    expect(wrangler).toMatch(/^TICK_PASSES = "5"$/m);
    expect(wrangler).toMatch(/^TICK_SPACING_SECONDS = "10"$/m);
  });

  it("keeps paused sandboxes as long as SNAPSHOT_RETENTION_SECONDS says (a week unset), as the Node host does", async () => {
    const wrangler = readFileSync(new URL("../../wrangler.toml", import.meta.url), "utf8");
    expect(wrangler).toMatch(/^SNAPSHOT_RETENTION_SECONDS = "604800"$/m);
    const log = { debug() {}, info() {}, warn() {}, error() {} };
    const depsOf = async (env: Record<string, unknown>) => {
      const config = readWorkerEnv(env);
      if (!config.ok) throw new Error(config.errors.join("; "));
      return workerDeps(config.value, env as never, log);
    };
    expect((await depsOf(good)).snapshotRetentionSeconds).toBe(604_800);
    expect((await depsOf({ ...good, SNAPSHOT_RETENTION_SECONDS: "3600" })).snapshotRetentionSeconds).toBe(
      3600,
    );
    // The Node host reads AGENTBOX_SNAPSHOT_RETENTION_SECONDS with the same schema: the same values fail.
    for (const value of ["59", "90.5", "a day"]) {
      const bad = readWorkerEnv({ ...good, SNAPSHOT_RETENTION_SECONDS: value });
      expect(bad.ok ? [] : bad.errors, value).toEqual([
        expect.stringMatching(/^SNAPSHOT_RETENTION_SECONDS: /),
      ]);
      expect(parseWith(SnapshotRetentionSetting, value).ok, value).toBe(false);
    }
    expect(parseWith(SnapshotRetentionSetting, "60")).toEqual({ ok: true, value: 60 });
  });

  it("reads the cluster ID, adoption and the idle-release mode, and refuses pulled without a source", () => {
    expect(
      readWorkerEnv({ ...good, CLUSTER_ID: "eu-1", ADOPT_POOLS: "true", IDLE_RELEASE: "off" }),
    ).toMatchObject({
      ok: true,
      value: { CLUSTER_ID: "eu-1", ADOPT_POOLS: true, IDLE_RELEASE: "off" },
    });
    const pulled = readWorkerEnv({ ...good, IDLE_RELEASE: "pulled" });
    expect(pulled.ok ? [] : pulled.errors).toEqual([
      "IDLE_RELEASE: pulled needs a pulled activity source (ACTIVITY_SOURCE_URL)",
    ]);
    const bad = readWorkerEnv({ ...good, ADOPT_POOLS: "yes", IDLE_RELEASE: "sometimes" });
    expect(bad.ok ? [] : bad.errors.map((e) => e.split(":")[0])).toEqual(["IDLE_RELEASE", "ADOPT_POOLS"]);
  });

  it("reads the router deployment's sandbox domain, refusing one that is no DNS name or is E2B's", () => {
    expect(readWorkerEnv({ ...good, SANDBOX_DOMAIN: "Sandbox.Example.com" })).toMatchObject({
      ok: true,
      value: { SANDBOX_DOMAIN: "sandbox.example.com" },
    });
    const unset = readWorkerEnv(good);
    expect(unset.ok && unset.value.SANDBOX_DOMAIN).toBeUndefined();
    for (const domain of ["sandbox.example.com:443", "e2b.dev", "sandbox.e2b.app"]) {
      const bad = readWorkerEnv({ ...good, SANDBOX_DOMAIN: domain });
      expect(bad.ok ? [] : bad.errors).toEqual([expect.stringMatching(/^SANDBOX_DOMAIN: must be/)]);
    }
  });

  it("names every missing binding, and bad values without echoing them", () => {
    const missing = readWorkerEnv({});
    expect(missing.ok ? [] : missing.errors).toEqual([
      'HISTORY: a D1 database binding is required ([[d1_databases]] binding = "HISTORY")',
      "KUBE_API_URL: is required (a var in wrangler.toml)",
      "KUBE_TOKEN: is required (a secret: npx wrangler secret put KUBE_TOKEN)",
      "CALLBACK_TOKEN: is required (a secret: npx wrangler secret put CALLBACK_TOKEN)",
      "ADMIN_TOKEN: is required (a secret: npx wrangler secret put ADMIN_TOKEN)",
    ]);
    const bad = readWorkerEnv({
      ...good,
      ADMIN_TOKEN: "short-secret",
      TICK_PASSES: "99",
      KUBE_API_URL: "kube",
      ACTIVITY_SOURCE_URL: "proxy stats",
    });
    const text = bad.ok ? "" : bad.errors.join("\n");
    for (const name of ["ADMIN_TOKEN", "TICK_PASSES", "KUBE_API_URL", "ACTIVITY_SOURCE_URL"])
      expect(text).toContain(name);
    expect(text).not.toContain("short-secret");
  });
});

describe("runtime-neutral code and the D1 migration", () => {
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((f) => {
      const p = join(dir, f);
      return statSync(p).isDirectory() ? files(p) : p.endsWith(".ts") ? [p] : [];
    });

  it("lib/, functions/, webhooks/ and the shared app import no Node-only module (client-node types are fine)", () => {
    const offenders = [
      ...["lib", "functions", "webhooks", "http", "hosts/worker"].flatMap(files),
      "hosts/app.ts",
    ].filter((f) => {
      const text = readFileSync(f, "utf8");
      return /from "node:|require\("node:|^import (?!type )[^;]*from "@kubernetes\/client-node"/m.test(text);
    });
    expect(offenders).toEqual([]);
  });

  it("the D1 migrations, applied in order, make the shared history (records, lifecycle events) and usage schemas", () => {
    const schemaOf = (statements: string[]) => {
      const db = new DatabaseSync(":memory:");
      for (const s of statements) db.exec(s);
      const objects = db
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
        .all();
      db.close();
      return objects;
    };
    const migrated = schemaOf(migrationStatements());
    expect(migrated.map((o) => o.name)).toContain("sandbox_history_owner_time");
    expect(migrated.map((o) => o.name)).toContain("sandbox_usage_series_last");
    expect(migrated.map((o) => o.name)).toContain("sandbox_lifecycle");
    expect(migrated).toEqual(schemaOf([...SCHEMA, ...USAGE_SCHEMA]));
  });
});

describe("a misconfigured Worker", () => {
  const admin = "a".repeat(16);
  // KUBE_TOKEN and the D1 binding are missing.
  const env = {
    KUBE_API_URL: "https://kube.example.com",
    CALLBACK_TOKEN: "c".repeat(16),
    ADMIN_TOKEN: admin,
  };
  const ctx = { waitUntil: () => {} };
  const ask = async (headers: Record<string, string> = {}) => {
    const res = await worker.fetch(
      new Request("https://worker.test/v1/sandboxes", { headers }),
      env as never,
      ctx,
    );
    return { status: res.status, body: (await res.json()) as { error: { code: string; fields?: string[] } } };
  };
  afterEach(() => vi.restoreAllMocks());

  it("tells an unauthenticated caller only that it is misconfigured, and logs the details", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: string) => void lines.push(line));
    const callers: Record<string, string>[] = [
      {},
      { "x-api-key": "abx_someone" },
      { authorization: `Bearer ${"b".repeat(16)}` },
    ];
    for (const headers of callers) {
      const { status, body } = await ask(headers);
      expect(status).toBe(500);
      expect(body).toEqual({ error: { code: "Misconfigured", message: "the Worker is misconfigured" } });
    }
    expect(lines.join("\n")).toContain("KUBE_TOKEN");
    expect(lines.join("\n")).toContain("HISTORY");
  });

  it("names the bad bindings to a caller presenting the admin token", async () => {
    vi.spyOn(console, "log").mockImplementation(() => {});
    const { status, body } = await ask({ authorization: `Bearer ${admin}` });
    expect(status).toBe(500);
    expect(body.error.code).toBe("Misconfigured");
    expect(body.error.fields?.map((f) => f.split(":")[0])).toEqual(["HISTORY", "KUBE_TOKEN"]);
    expect(JSON.stringify(body)).not.toContain(admin);
  });
});
