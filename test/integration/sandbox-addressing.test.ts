import { describe, expect, it } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import { httpsRequest } from "./support/http.ts";
import { kube } from "./support/kube.ts";
import { TEST_SANDBOX_DOMAIN } from "./support/sandbox-domain.ts";
import { runSdkScript } from "./support/sdk-script.ts";
import { API_KEYS, tenantPool } from "./support/tenant-pool.ts";

// Where sandbox traffic goes: the test host answers its sandbox domain (AGENTBOX_SANDBOX_DOMAIN)
// in the E2B answers, so the real SDK computes `https://49983-<id>.<domain>` for envd, and the
// native GET shows a sandbox's URLs to anyone who sees it and its envd token to its owner only.

const { cluster } = kube();
const t = tenantPool("addressing", "research");
const host = `https://127.0.0.1:${cluster.hostPort}`;

function get(path: string, apiKey: string) {
  return httpsRequest(`${host}${path}`, cluster.caCert, {
    timeoutMs: 30_000,
    headers: { "x-api-key": apiKey },
  });
}

describe("sandbox addressing", () => {
  it("gives the SDK the sandbox domain, and the native GET the URLs and, to the owner, the token", async () => {
    const stdout = await runSdkScript(
      "e2b-sdk-addressing.ts",
      { E2B_API_KEY: t.key, E2B_TEST_TEMPLATE: `${t.ns}/p` },
      120_000,
    );
    const out = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Record<
      string,
      Record<string, string>
    >;
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
    expect(out.info).toEqual({ sandboxDomain: TEST_SANDBOX_DOMAIN });
    expect(out.connected).toEqual({
      sandboxDomain: TEST_SANDBOX_DOMAIN,
      envdUrl: `https://49983-${id}.${TEST_SANDBOX_DOMAIN}`,
    });

    const urls = {
      domain: TEST_SANDBOX_DOMAIN,
      urlPattern: `https://{port}-${id}.${TEST_SANDBOX_DOMAIN}`,
      envdUrl: `https://49983-${id}.${TEST_SANDBOX_DOMAIN}`,
    };
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

    const killed = await httpsRequest(`${host}/v1/sandboxes/${id}`, cluster.caCert, {
      method: "DELETE",
      timeoutMs: 30_000,
      headers: { "x-api-key": t.key },
    });
    expect(killed.status).toBe(204);
  });
});
