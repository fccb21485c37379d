import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { describe, expect, it, onTestFinished } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import { createApp } from "../../hosts/app.ts";
import { UNSET_SANDBOX_DOMAIN } from "../../lib/e2b/answers.ts";
import { httpsRequest } from "./support/http.ts";
import { inProcessApi } from "./support/in-process-api.ts";
import { kube } from "./support/kube.ts";
import { TEST_SANDBOX_DOMAIN } from "./support/sandbox-domain.ts";
import { runSdkScript } from "./support/sdk-script.ts";
import { withPostStart } from "./support/steps.ts";
import { API_KEYS, tenantPool } from "./support/tenant-pool.ts";

// Where sandbox traffic goes: the test host answers its sandbox domain (AGENTBOX_SANDBOX_DOMAIN)
// in the E2B answers, so the real SDK computes `https://49983-<id>.<domain>` for envd, and the
// native GET and create show a sandbox's URLs to anyone who sees it and its envd token to its
// owner only (an admin's E2B get and connect too). A host without a sandbox domain answers one
// the SDK cannot leave the machine for.

const { cluster } = kube();
const t = tenantPool("addressing", "research", 2);
const host = `https://127.0.0.1:${cluster.hostPort}`;

function call(method: string, path: string, apiKey: string, body?: unknown) {
  return httpsRequest(`${host}${path}`, cluster.caCert, {
    method,
    timeoutMs: 90_000,
    headers: { "x-api-key": apiKey, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}
const get = (path: string, apiKey: string) => call("GET", path, apiKey);

/** releasedAfter releases sandbox `id` when the test ends, passed or failed (its pod serves the next test). */
function releasedAfter(id: string) {
  onTestFinished(async () => {
    expect((await call("DELETE", `/v1/sandboxes/${id}`, t.key)).status).toBe(204);
  });
}

/** nativeCreate claims a sandbox of the pool with /v1, waiting for an idle pod (and for Running, with `wait`). */
const nativeCreate = (wait: boolean) =>
  call("POST", "/v1/sandboxes", t.key, { pool: `${t.ns}/p`, waitTimeout: 60, ...(wait ? { wait } : {}) });

/** sdkOut runs an SDK support script and reads the JSON line it printed last. */
async function sdkOut(script: string, env: Record<string, string>): Promise<Record<string, unknown>> {
  const stdout = await runSdkScript(script, env, 120_000);
  return JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
}

/** urlsOf is what anyone who sees sandbox `id` is told of how it is reached, on the test host. */
const urlsOf = (id: string) => ({
  domain: TEST_SANDBOX_DOMAIN,
  urlPattern: `https://{port}-${id}.${TEST_SANDBOX_DOMAIN}`,
  envdUrl: `https://49983-${id}.${TEST_SANDBOX_DOMAIN}`,
});

describe("sandbox addressing", () => {
  it("gives the SDK the sandbox domain, and the native GET the URLs and, to the owner, the token", async () => {
    const out = (await sdkOut("e2b-sdk-addressing.ts", {
      E2B_API_KEY: t.key,
      E2B_TEST_TEMPLATE: `${t.ns}/p`,
    })) as Record<string, Record<string, string>>;
    expect(out.error).toBeUndefined();
    const id = out.created?.sandboxId ?? "";
    const token = out.created?.envdAccessToken ?? "";
    expect(out.created).toEqual({
      sandboxId: expect.stringMatching(/^sbx-/),
      sandboxDomain: TEST_SANDBOX_DOMAIN,
      envdUrl: `https://49983-${id}.${TEST_SANDBOX_DOMAIN}`,
      host: `3000-${id}.${TEST_SANDBOX_DOMAIN}`,
      envdAccessToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    releasedAfter(id);
    expect(out.info).toEqual({ sandboxDomain: TEST_SANDBOX_DOMAIN });
    expect(out.connected).toEqual({
      sandboxDomain: TEST_SANDBOX_DOMAIN,
      envdUrl: `https://49983-${id}.${TEST_SANDBOX_DOMAIN}`,
    });

    const urls = urlsOf(id);
    // The owner: URLs and the same token the E2B create answered.
    const own = await get(`/v1/sandboxes/${id}`, t.key);
    expect(own.status).toBe(200);
    expect(JSON.parse(own.body).access).toEqual({ ...urls, envdAccessToken: token });
    // Another tenant (same team, another user): nothing, as if there were no such sandbox.
    const other = await get(`/v1/sandboxes/${id}`, await t.keyOf("someone-else"));
    expect(other.status).toBe(404);
    expect(other.body).not.toContain(token);
    // An admin sees the sandbox and its URLs, but gets no credential into it.
    const admin = await createApiKey(
      { kube: t.deps.kube, apiKeys: API_KEYS, now: () => new Date() },
      { team: "ops", user: "root", admin: true },
    );
    const seen = await get(`/v1/sandboxes/${id}`, admin);
    expect(seen.status).toBe(200);
    expect(JSON.parse(seen.body).access).toEqual(urls);
    expect(seen.body).not.toContain(token);
    // Through the E2B API likewise: the owner's get has the token; an admin's get and connect
    // answer the sandbox without one (the SDK sends no X-Access-Token then).
    const e2bOwn = await get(`/e2b/sandboxes/${id}`, t.key);
    expect(e2bOwn.status).toBe(200);
    expect(JSON.parse(e2bOwn.body)).toMatchObject({ sandboxID: id, envdAccessToken: token });
    const e2bSeen = await get(`/e2b/sandboxes/${id}`, admin);
    expect(e2bSeen.status).toBe(200);
    expect(JSON.parse(e2bSeen.body)).toMatchObject({ sandboxID: id, domain: TEST_SANDBOX_DOMAIN });
    expect(e2bSeen.body).not.toContain("envdAccessToken");
    const connected = await call("POST", `/e2b/sandboxes/${id}/connect`, admin, { timeout: 300 });
    expect(connected.status).toBe(200);
    expect(JSON.parse(connected.body)).toMatchObject({ sandboxID: id, domain: TEST_SANDBOX_DOMAIN });
    expect(connected.body).not.toContain("envdAccessToken");
    // The SDK connects without one (and sends no X-Access-Token).
    expect(await sdkOut("e2b-sdk-connect.ts", { E2B_API_KEY: admin, E2B_TEST_SANDBOX: id })).toMatchObject({
      connected: { sandboxDomain: TEST_SANDBOX_DOMAIN, hasToken: false },
    });
  });

  it("answers a native create with the access its GET gives the owner", async () => {
    const res = await nativeCreate(false);
    expect(res.status, res.body).toBe(201);
    const created = JSON.parse(res.body) as { sandboxId: string; access?: Record<string, string> };
    const id = created.sandboxId;
    releasedAfter(id);
    expect(created.access).toEqual({
      ...urlsOf(id),
      envdAccessToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    expect(JSON.parse((await get(`/v1/sandboxes/${id}`, t.key)).body).access).toEqual(created.access);
  });

  it("without a sandbox domain, answers one the SDK cannot leave the machine for", async () => {
    // A sandbox made on the test host (a create that waits answers the access too)…
    const res = await nativeCreate(true);
    expect(res.status, res.body).toBe(201);
    const created = JSON.parse(res.body) as { sandboxId: string; phase: string; access?: object };
    const id = created.sandboxId;
    releasedAfter(id);
    expect(created).toMatchObject({ phase: "running", access: urlsOf(id) });
    // …connected to by its owner through the same API on a host without a sandbox domain.
    const api = await withPostStart(inProcessApi(t.deps).deps);
    const server = serve({
      fetch: createApp({ callbackToken: "unused", logger: api.log, api }).fetch,
      port: 0,
      hostname: "127.0.0.1",
    });
    try {
      await once(server, "listening");
      const { port } = server.address() as AddressInfo;
      const out = await sdkOut("e2b-sdk-connect.ts", {
        E2B_API_URL: `http://127.0.0.1:${port}/e2b`,
        E2B_API_KEY: t.key,
        E2B_TEST_SANDBOX: id,
      });
      expect(out.error).toBeUndefined();
      expect(out.connected).toEqual({
        sandboxDomain: UNSET_SANDBOX_DOMAIN,
        envdUrl: `https://49983-${id}.${UNSET_SANDBOX_DOMAIN}`,
        hasToken: true,
      });
      // The command fails at name resolution, on this machine: no request (no token) went out.
      expect(out).toMatchObject({
        ran: expect.stringContaining("fetch failed"),
        failed: [`49983-${id}.${UNSET_SANDBOX_DOMAIN} ENOTFOUND`],
        sent: [],
      });
    } finally {
      server.close();
      if ("closeAllConnections" in server) server.closeAllConnections();
    }
  }, 180_000);
});
