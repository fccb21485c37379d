import { beforeAll, describe, expect, it } from "vitest";
import { expectEnvdFlow } from "./support/envd-flow-expect.ts";
import { httpsRequest } from "./support/http.ts";
import { kube } from "./support/kube.ts";
import { runSdkScript } from "./support/sdk-script.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// The envd stand-in (infra/dev/envd/) behind a sandbox created through the E2B API, driven by the
// official e2b SDK unmodified: E2B_SANDBOX_URL aims its envd calls at the stand-in on the
// sandbox's pod IP (until the router exists), everything else goes through the control plane.

const { cluster } = kube();
const t = tenantPool("envd", "research");
const base = `https://127.0.0.1:${cluster.hostPort}/e2b`;

const pods = t.pods;

beforeAll(() => t.allIdle());

describe("the envd stand-in, through the official e2b SDK", () => {
  it("runs commands and moves files for the sandbox's token holder only", async () => {
    const res = await httpsRequest(`${base}/sandboxes`, cluster.caCert, {
      timeoutMs: 60_000,
      method: "POST",
      headers: { "content-type": "application/json", "X-API-KEY": t.key },
      body: JSON.stringify({ templateID: `${t.ns}/p`, envVars: { GREETING: "hello from create" } }),
    });
    expect(res.status).toBe(201);
    const sandbox = JSON.parse(res.body) as { sandboxID: string; envdAccessToken: string };
    const [pod] = (await pods()).filter(
      (p) => p.metadata?.labels?.["agentbox.navix.sh/sandbox-id"] === sandbox.sandboxID,
    );
    const envdUrl = `http://${pod?.status?.podIP}:${cluster.envdPort}`;
    const stdout = await runSdkScript(
      "e2b-envd-flow.ts",
      { E2B_API_KEY: t.key, E2B_SANDBOX_URL: envdUrl, E2B_TEST_SANDBOX: sandbox.sandboxID },
      60_000,
    );
    expectEnvdFlow(stdout);

    // Straight to the wire: an RPC without the token is a Connect unauthenticated error, and
    // /init, as on the real envd, takes no other token once the claim's is set: nobody without
    // it takes the sandbox over (the next sandbox on the pod runs in a new container).
    const bare = await fetch(`${envdUrl}/process.Process/List`, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-protocol-version": "1" },
      body: "{}",
      signal: AbortSignal.timeout(10_000),
    });
    expect(bare.status).toBe(401);
    expect(await bare.json()).toMatchObject({ code: "unauthenticated" });
    const takeover = await fetch(`${envdUrl}/init`, {
      method: "POST",
      body: JSON.stringify({ accessToken: "next-sandbox", envVars: {} }),
      signal: AbortSignal.timeout(10_000),
    });
    expect(takeover.status).toBe(401);
    const listDir = (token: string) =>
      fetch(`${envdUrl}/filesystem.Filesystem/ListDir`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-access-token": token },
        body: JSON.stringify({ path: "/home/user" }),
        signal: AbortSignal.timeout(10_000),
      });
    expect((await listDir("next-sandbox")).status).toBe(401);
    expect((await listDir(sandbox.envdAccessToken)).status).toBe(200);
  });
});
