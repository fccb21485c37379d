import { readFileSync } from "node:fs";
import { createServer, request } from "node:http";
import { connect } from "node:http2";
import type { AddressInfo } from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import { expectEnvdFlow } from "./support/envd-flow-expect.ts";
import { httpsRequest } from "./support/http.ts";
import { kube } from "./support/kube.ts";
import { TEST_SANDBOX_DOMAIN } from "./support/sandbox-domain.ts";
import { runSdkScript } from "./support/sdk-script.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// The sandbox router of the test host (hosts/node/data-plane/): the official e2b SDK, unmodified,
// reaches a sandbox THROUGH it by header routing (E2B_SANDBOX_URL is the router's plain listener
// on an IP, so the SDK names the sandbox in E2b-Sandbox-Id/Port), its envd being the stand-in on
// the pod's IP. The router finds the pod from its watch and checks the envd token itself.

const { cluster } = kube();
const t = tenantPool("router", "research", 2);
const base = `https://127.0.0.1:${cluster.hostPort}/e2b`;
const router = `http://127.0.0.1:${cluster.dataPlanePort}`;

const pods = t.pods;

beforeAll(() => t.allIdle());

/** createSandbox creates a sandbox through the E2B API and says its id and pod IP. */
async function createSandbox(envVars: Record<string, string> = {}) {
  const res = await httpsRequest(`${base}/sandboxes`, cluster.caCert, {
    timeoutMs: 60_000,
    method: "POST",
    headers: { "content-type": "application/json", "X-API-KEY": t.key },
    body: JSON.stringify({ templateID: `${t.ns}/p`, envVars }),
  });
  expect(res.status).toBe(201);
  const { sandboxID, envdAccessToken } = JSON.parse(res.body) as {
    sandboxID: string;
    envdAccessToken: string;
  };
  const [pod] = (await pods()).filter(
    (p) => p.metadata?.labels?.["agentbox.navix.sh/sandbox-id"] === sandboxID,
  );
  return { sandboxID, envdAccessToken, podIP: pod?.status?.podIP ?? "" };
}

/** lastJson is the JSON line a support script printed last. */
const lastJson = (stdout: string) =>
  JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;

describe("the sandbox router, through the official e2b SDK", () => {
  it("runs commands and moves files by header routing, and refuses what it must", async () => {
    const { sandboxID } = await createSandbox({ GREETING: "hello from create" });
    const env = { E2B_API_KEY: t.key, E2B_SANDBOX_URL: router, E2B_TEST_SANDBOX: sandboxID };

    // Everything the SDK does against envd directly works the same through the router; a wrong
    // token is refused by the router (401) before envd sees it: the SDK's AuthenticationError.
    expectEnvdFlow(await runSdkScript("e2b-envd-flow.ts", env, 60_000));

    // Straight to the wire: refusals are E2B-shaped JSON, envd's control routes are unreachable.
    const ask = (path: string, headers: Record<string, string>, method = "GET") =>
      fetch(`${router}${path}`, { method, headers, signal: AbortSignal.timeout(10_000) });
    const noPort = await ask("/health", { "e2b-sandbox-id": sandboxID });
    expect(noPort.status).toBe(400);
    expect(await noPort.json()).toEqual({ message: expect.stringMatching(/E2b-Sandbox-Port/), code: 400 });
    const envd = { "e2b-sandbox-id": sandboxID, "e2b-sandbox-port": "49983" };
    expect((await ask("/health", envd)).status).toBe(204);
    const init = await ask("/init", envd, "POST");
    expect(init.status).toBe(404);
    const noToken = await ask("/envs", envd);
    expect(noToken.status).toBe(401);
    expect(await noToken.json()).toMatchObject({ sandboxId: sandboxID, code: 401 });

    // Unknown, then killed: the router has no route, and the SDK says so as it does on E2B.
    const misses = lastJson(await runSdkScript("e2b-router-misses.ts", env, 60_000));
    expect(misses.error).toBeUndefined();
    expect(misses.unknownRun).toMatch(/^SandboxNotFoundError/);
    expect(misses.unknownRunning).toBe(false);
    expect(misses.before).toBe("before\n");
    expect(misses.afterKillRun).toMatch(/^SandboxNotFoundError/);
    expect(misses.afterKillRead).toMatch(/^TimeoutError: The sandbox was not found/);
    expect(misses.afterKillRunning).toBe(false);
    const gone = await ask("/health", envd);
    expect(gone.status).toBe(502);
    expect(await gone.json()).toEqual({
      sandboxId: sandboxID,
      message: "The sandbox was not found",
      code: 502,
    });
  });

  it("routes by name over TLS and HTTP/2, and forwards other ports and websocket upgrades", async () => {
    const { sandboxID, envdAccessToken, podIP } = await createSandbox();
    // A server of the sandbox's own on another port of its pod IP: answers, and upgrades to an echo.
    const app = createServer((req, res) =>
      res.end(`app saw ${req.method} ${req.url} host ${req.headers.host}`),
    );
    app.on("upgrade", (req, socket) => {
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nupgrade: ${req.headers.upgrade}\r\nconnection: upgrade\r\n\r\n`,
      );
      socket.pipe(socket);
    });
    await new Promise<void>((resolve) => app.listen(0, podIP, resolve));
    const appPort = (app.address() as AddressInfo).port;
    try {
      // HTTP/2 over TLS (ALPN h2), the sandbox named by :authority under the sandbox domain.
      const session = connect(`https://127.0.0.1:${cluster.dataPlaneTlsPort}`, {
        ca: readFileSync(cluster.caCert),
      });
      session.on("error", () => {});
      const h2 = (authority: string, path: string, headers: Record<string, string> = {}) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          const stream = session.request({ ":authority": authority, ":path": path, ...headers });
          stream.setTimeout(10_000, () => stream.close());
          let status = 0;
          let body = "";
          stream.on("response", (h) => {
            status = Number(h[":status"]);
          });
          stream.setEncoding("utf8");
          stream.on("data", (d: string) => {
            body += d;
          });
          stream.on("end", () => resolve({ status, body }));
          stream.on("error", reject);
        });
      const envdHost = `49983-${sandboxID}.${TEST_SANDBOX_DOMAIN}`;
      expect((await h2(envdHost, "/health")).status).toBe(204);
      const envs = await h2(envdHost, "/envs", { "x-access-token": envdAccessToken });
      expect(envs.status).toBe(200);
      expect((await h2(envdHost, "/envs", { "x-access-token": "nope" })).status).toBe(401);
      const appHost = `${appPort}-${sandboxID}.${TEST_SANDBOX_DOMAIN}`;
      expect(await h2(appHost, "/x?y=1")).toEqual({
        status: 200,
        body: `app saw GET /x?y=1 host ${appHost}`,
      });
      const elsewhere = await h2("3000-sbx-a.example.com", "/");
      expect(elsewhere.status).toBe(400);
      expect(JSON.parse(elsewhere.body)).toMatchObject({
        code: 400,
        message: expect.stringMatching(/not under/),
      });
      session.close();

      // A websocket-style upgrade on the plain listener, by headers: both ways through the router.
      const echoed = await new Promise<string>((resolve, reject) => {
        const req = request({
          host: "127.0.0.1",
          port: cluster.dataPlanePort,
          path: "/ws",
          headers: {
            connection: "upgrade",
            upgrade: "websocket",
            "e2b-sandbox-id": sandboxID,
            "e2b-sandbox-port": String(appPort),
          },
          timeout: 10_000,
        });
        req.on("upgrade", (res, socket) => {
          expect(res.statusCode).toBe(101);
          socket.end("ping through the router");
          let got = "";
          socket.setEncoding("utf8");
          socket.on("data", (d: string) => {
            got += d;
          });
          socket.on("end", () => resolve(got));
          socket.on("error", reject);
        });
        req.on("response", (res) => reject(new Error(`no upgrade: ${res.statusCode}`)));
        req.on("error", reject);
        req.end();
      });
      expect(echoed).toBe("ping through the router");
    } finally {
      app.close();
      app.closeAllConnections();
    }
  });
});
