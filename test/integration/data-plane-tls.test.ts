import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConnectProxy, httpsViaProxy, openTunnel, startConnectProxy } from "./support/connect-proxy.ts";
import { expectEnvdFlow } from "./support/envd-flow-expect.ts";
import { httpsRequest } from "./support/http.ts";
import { kube } from "./support/kube.ts";
import { TEST_SANDBOX_DOMAIN } from "./support/sandbox-domain.ts";
import { runSdkScript } from "./support/sdk-script.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// The sandbox router by host routing over TLS, as on E2B: the official e2b SDK, unmodified and
// without E2B_SANDBOX_URL, aims at `https://49983-<id>.<domain>` from the domain the API answers,
// and verifies the router's certificate (the host's, which covers `*.<domain>`) against the test
// CA. The `.test` names resolve nowhere, so the SDK's own `proxy` option sends it through a CONNECT
// proxy the test runs: sandbox names go to the router's TLS listener, the host's API to itself.

const { cluster } = kube();
const t = tenantPool("router-tls", "research", 1);
const api = `127.0.0.1:${cluster.hostPort}`;
const suffix = `.${TEST_SANDBOX_DOMAIN}`;
let proxy: ConnectProxy;

beforeAll(async () => {
  proxy = await startConnectProxy((host, port) => {
    if (host.endsWith(suffix) && port === 443) return { host: "127.0.0.1", port: cluster.dataPlaneTlsPort };
    if (`${host}:${port}` === api) return { host: "127.0.0.1", port: cluster.hostPort };
    return undefined;
  });
  await t.allIdle();
});
afterAll(() => proxy?.close());

describe("the sandbox router by host routing over TLS", () => {
  it("serves the official SDK by name, verified against the test CA, through a CONNECT proxy", async () => {
    const created = await httpsRequest(`https://${api}/e2b/sandboxes`, cluster.caCert, {
      timeoutMs: 60_000,
      method: "POST",
      headers: { "content-type": "application/json", "X-API-KEY": t.key },
      body: JSON.stringify({ templateID: `${t.ns}/p`, envVars: { GREETING: "hello from create" } }),
    });
    expect(created.status).toBe(201);
    const { sandboxID, domain } = JSON.parse(created.body) as { sandboxID: string; domain: string };
    expect(domain).toBe(TEST_SANDBOX_DOMAIN);
    const envdHost = `49983-${sandboxID}${suffix}`;

    // Commands, streams, files, kills and the wrong token (AuthenticationError) as on E2B; every
    // envd call went by name through the proxy to the router, none to an E2B address.
    const env = { E2B_API_KEY: t.key, E2B_TEST_SANDBOX: sandboxID, E2B_TEST_PROXY: proxy.url };
    expectEnvdFlow(await runSdkScript("e2b-envd-flow.ts", env, 60_000));
    expect(proxy.tunnels).toContain(`${envdHost}:443`);
    expect(proxy.tunnels).toContain(api);
    expect(proxy.tunnels.filter((a) => a !== api && !a.endsWith(`${suffix}:443`))).toEqual([]);
    expect(proxy.refused).toEqual([]);

    // On the wire by the same path: the certificate verifies for the name, a wrong token is the
    // router's 401, an unknown sandbox under the domain the E2B-shaped not-found.
    const via = (host: string, path: string, headers: Record<string, string> = {}) =>
      httpsViaProxy(proxy.url, `https://${host}${path}`, cluster.caCert, headers);
    expect((await via(envdHost, "/health")).status).toBe(204);
    const wrong = await via(envdHost, "/envs", { "x-access-token": "wrong-token" });
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.body)).toMatchObject({ sandboxId: sandboxID, code: 401 });
    const unknownId = "sbx-nosuchsandbox2345";
    const unknown = await via(`49983-${unknownId}${suffix}`, "/health");
    expect(unknown.status).toBe(502);
    expect(JSON.parse(unknown.body)).toEqual({
      sandboxId: unknownId,
      message: "The sandbox was not found",
      code: 502,
    });

    // The proxy is the test's resolver, not an open relay.
    expect((await openTunnel(proxy.url, "49983-x.e2b.app:443")).status).toBe(403);
    expect(proxy.refused).toEqual(["49983-x.e2b.app:443"]);
  });
});
