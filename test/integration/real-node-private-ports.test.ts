import { beforeAll, describe, expect, it } from "vitest";
import { httpsRequest } from "./support/http.ts";
import { kube, until } from "./support/kube.ts";
import { REAL_IMAGES, realPoolSpec, WEB_PAGE } from "./support/real-node.ts";
import { routerGet } from "./support/router-get.ts";
import { TEST_SANDBOX_DOMAIN } from "./support/sandbox-domain.ts";
import { runSdkScript } from "./support/sdk-script.ts";
import { isReady, phaseOf } from "./support/steps.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// Issue #38, point 4: private ports. The official e2b SDK creates a sandbox of the web image on the
// real node with network {allowPublicTraffic: false}: it gets a traffic token, its port 8080
// (busybox httpd in the container) answers through the router only with `e2b-traffic-access-token`
// (403 in E2B's shape without it or with a wrong one), while envd's port needs none (the SDK runs a
// command with its envd token only).

const { cluster } = kube();
const web = tenantPool("rn-private", "research", 1, realPoolSpec(1, { image: REAL_IMAGES.web }));
const e2bBase = `https://127.0.0.1:${cluster.hostPort}/e2b`;

beforeAll(async () => {
  await until("the web pool's pod idle on the real node", 240_000, async () => {
    const pods = await web.pods();
    return pods.length === 1 && pods.every((p) => phaseOf(p) === "idle" && isReady(p));
  });
}, 300_000);

describe("a sandbox with allowPublicTraffic false", () => {
  it("answers on its ports only with its traffic token; envd's port needs none", async () => {
    const stdout = await runSdkScript(
      "e2b-sdk-network.ts",
      {
        E2B_API_URL: e2bBase,
        E2B_API_KEY: web.key,
        E2B_TEST_TEMPLATE: `${web.ns}/p`,
        E2B_TEST_DO: "private",
        E2B_SANDBOX_URL: `http://127.0.0.1:${cluster.dataPlanePort}`,
      },
      150_000,
    );
    const out = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, string>;
    expect(out.error).toBeUndefined();
    expect(out.trafficAccessToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(out.network).toEqual({ allowPublicTraffic: false });
    expect(out.envd).toBe("envd-ok\n");
    const id = out.sandboxId ?? "";
    const host = `8080-${id}.${TEST_SANDBOX_DOMAIN}`;

    const missing = await routerGet(cluster.dataPlanePort, host, "/");
    expect(missing.status).toBe(403);
    expect(JSON.parse(missing.body)).toMatchObject({
      code: 403,
      message:
        "Sandbox is secured with traffic access token. Token header 'e2b-traffic-access-token' is missing",
    });
    const wrong = await routerGet(cluster.dataPlanePort, host, "/", {
      "e2b-traffic-access-token": `${out.trafficAccessToken?.slice(1)}x`,
    });
    expect(wrong.status).toBe(403);
    expect(JSON.parse(wrong.body).message).toMatch(/is invalid$/);
    expect(
      await routerGet(cluster.dataPlanePort, host, "/", {
        "e2b-traffic-access-token": out.trafficAccessToken ?? "",
      }),
    ).toEqual({
      status: 200,
      body: WEB_PAGE,
    });

    // The token is the owner's: another key of the team sees the sandbox without it.
    const other = await web.keyOf("not-the-owner");
    const seen = await httpsRequest(`${e2bBase}/sandboxes/${id}`, cluster.caCert, {
      timeoutMs: 30_000,
      headers: { "X-API-KEY": other },
    });
    if (seen.status === 200) expect(JSON.parse(seen.body).trafficAccessToken).toBeUndefined();
    else expect(seen.status).toBe(404);
    const mine = await httpsRequest(`${e2bBase}/sandboxes/${id}`, cluster.caCert, {
      timeoutMs: 30_000,
      headers: { "X-API-KEY": web.key },
    });
    expect(JSON.parse(mine.body)).toMatchObject({
      trafficAccessToken: out.trafficAccessToken,
      network: { allowPublicTraffic: false },
    });
    const killed = await httpsRequest(`${e2bBase}/sandboxes/${id}`, cluster.caCert, {
      timeoutMs: 30_000,
      method: "DELETE",
      headers: { "X-API-KEY": web.key },
    });
    expect(killed.status).toBe(204);
    // Back to idle, the mark is gone with the sandbox.
    const idle = await until("the pod idle again", 120_000, async () => {
      const [p] = await web.pods();
      return p && phaseOf(p) === "idle" && isReady(p) && p;
    });
    expect(idle.metadata?.annotations?.["agentbox.navix.sh/traffic"]).toBeUndefined();
  }, 300_000);
});
