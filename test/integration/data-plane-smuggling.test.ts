import { readFileSync } from "node:fs";
import { connect } from "node:http2";
import { beforeAll, describe, expect, it } from "vitest";
import { e2bSandbox } from "./support/e2b-sandbox.ts";
import { httpsRequest } from "./support/http.ts";
import { kube } from "./support/kube.ts";
import { envdRequests, logSize, rawExchange, seen, statuses } from "./support/raw-http.ts";
import { TEST_SANDBOX_DOMAIN } from "./support/sandbox-domain.ts";
import { runSdkScript } from "./support/sdk-script.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// Issue #35, points 1 to 3, at the router: nothing reaches a sandbox's envd (the stand-in, which
// records every request it gets, per pod IP) that the router did not decide as a request of its
// own: no request hidden in a GET's body (HTTP/1.1 chunked, HTTP/2 DATA), no tokenless /files
// with a made-up signature, no /init or tokenless call on envd's port under its pod number.

const { cluster } = kube();
const t = tenantPool("smuggle", "research", 2);
const log = cluster.envdRequestLog;
const router = cluster.dataPlanePort;

beforeAll(() => t.allIdle());

/** v1Sandbox creates a sandbox through /v1 without env vars (its envd gets the token from the claim's own hook). */
async function v1Sandbox() {
  const res = await httpsRequest(`https://127.0.0.1:${cluster.hostPort}/v1/sandboxes`, cluster.caCert, {
    timeoutMs: 60_000,
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": t.key },
    body: JSON.stringify({ pool: `${t.ns}/p`, wait: true, waitTimeout: 30 }),
  });
  expect(res.status).toBe(201);
  const { sandboxId, podIP } = JSON.parse(res.body) as { sandboxId: string; podIP: string };
  return { id: sandboxId, podIP };
}

/** request is one whole HTTP/1.1 request: head lines, then the body. */
const request = (line: string, headers: string[], body = "") =>
  `${[line, ...headers].join("\r\n")}\r\n\r\n${body}`;

/** chunked frames a body as one chunk and the last chunk. */
const chunked = (body: string) => `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;

/** fetchVia sends one request through the router's plain listener, the sandbox named by its Host. */
function fetchVia(host: string, path: string, init: RequestInit & { headers?: Record<string, string> } = {}) {
  return rawExchange(
    router,
    request(
      `${init.method ?? "GET"} ${path} HTTP/1.1`,
      [
        `Host: ${host}`,
        "Connection: close",
        ...Object.entries(init.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
        ...(typeof init.body === "string" ? [`Content-Length: ${Buffer.byteLength(init.body)}`] : []),
      ],
      typeof init.body === "string" ? init.body : "",
    ),
  );
}

/** owned is the sandbox the tests share (made on first use): its envd holds its owner's token. */
let owned: ReturnType<typeof e2bSandbox> | undefined;
const ownedSandbox = () => {
  owned ??= e2bSandbox(cluster, t);
  return owned;
};

const INIT_BODY = JSON.stringify({ accessToken: "attacker", envVars: { PWNED: "1" } });

describe("the router's request framing (issue #35, point 2)", () => {
  it("re-frames a chunked GET's body: a /init or /files write hidden in it never reaches envd (HTTP/1.1)", async () => {
    const s = await ownedSandbox();
    const host = `49983-${s.id}.${TEST_SANDBOX_DOMAIN}`;
    const init = request(
      "POST /init HTTP/1.1",
      [`Host: ${host}`, "Content-Type: application/json", `Content-Length: ${INIT_BODY.length}`],
      INIT_BODY,
    );
    const write = request(
      "POST /files?path=/home/user/pwned.txt&username=root HTTP/1.1",
      [`Host: ${host}`, "Content-Type: application/octet-stream", "Content-Length: 5"],
      "pwned",
    );
    for (const hidden of [init, write]) {
      const from = logSize(log);
      const raw = await rawExchange(
        router,
        request(
          "GET /health HTTP/1.1",
          [`Host: ${host}`, "Transfer-Encoding: chunked", "Connection: close"],
          chunked(hidden),
        ),
      );
      expect(statuses(raw)).toEqual([204]);
      // The stand-in got the GET, its body framed (chunked), and nothing after it.
      const got = envdRequests(log, s.podIP, cluster.envdPort, from);
      expect(seen(got)).toEqual(["GET /health"]);
      expect(got[0]?.headers["transfer-encoding"]).toBe("chunked");
    }
    // The owner's token is still envd's, and no file was written.
    const owner = { "x-access-token": s.token };
    expect(statuses(await fetchVia(host, "/envs", { headers: owner }))).toEqual([200]);
    expect(statuses(await fetchVia(host, "/files?path=/home/user/pwned.txt", { headers: owner }))).toEqual([
      404,
    ]);
  });

  it("re-frames HTTP/2 DATA on a GET: a /init or /files write hidden in it never reaches envd", async () => {
    const s = await ownedSandbox();
    const host = `49983-${s.id}.${TEST_SANDBOX_DOMAIN}`;
    const session = connect(`https://127.0.0.1:${cluster.dataPlaneTlsPort}`, {
      ca: readFileSync(cluster.caCert),
    });
    session.on("error", () => {});
    try {
      const init = request(
        "POST /init HTTP/1.1",
        [`Host: ${host}`, `Content-Length: ${INIT_BODY.length}`],
        INIT_BODY,
      );
      const write = request(
        "POST /files?path=/home/user/pwned2.txt&username=root HTTP/1.1",
        [`Host: ${host}`, "Content-Type: application/octet-stream", "Content-Length: 5"],
        "pwned",
      );
      for (const hidden of [init, write]) {
        const from = logSize(log);
        const status = await new Promise<number>((resolve, reject) => {
          const stream = session.request(
            { ":method": "GET", ":path": "/health", ":authority": host },
            { endStream: false },
          );
          stream.setTimeout(10_000, () => stream.close());
          let code = 0;
          stream.on("response", (h) => {
            code = Number(h[":status"]);
          });
          stream.resume();
          stream.on("end", () => resolve(code));
          stream.on("error", reject);
          stream.end(hidden);
        });
        expect(status).toBe(204);
        const got = envdRequests(log, s.podIP, cluster.envdPort, from);
        expect(seen(got)).toEqual(["GET /health"]);
        expect(got[0]?.headers["transfer-encoding"]).toBe("chunked");
      }
    } finally {
      session.close();
    }
    const owner = { "x-access-token": s.token };
    expect(statuses(await fetchVia(host, "/files?path=/home/user/pwned2.txt", { headers: owner }))).toEqual([
      404,
    ]);
    expect(statuses(await fetchVia(host, "/envs", { headers: { "x-access-token": s.token } }))).toEqual([
      200,
    ]);
  });

  it("refuses an upgrade request that carries a body", async () => {
    const s = await ownedSandbox();
    const host = `49983-${s.id}.${TEST_SANDBOX_DOMAIN}`;
    const hidden = request(
      "POST /init HTTP/1.1",
      [`Host: ${host}`, `Content-Length: ${INIT_BODY.length}`],
      INIT_BODY,
    );
    const from = logSize(log);
    const raw = await rawExchange(
      router,
      request(
        "GET /health HTTP/1.1",
        [
          `Host: ${host}`,
          "Connection: Upgrade",
          "Upgrade: websocket",
          `Content-Length: ${Buffer.byteLength(hidden)}`,
        ],
        hidden,
      ),
    );
    expect(statuses(raw)).toEqual([400]);
    expect(raw).toMatch(/may not carry a body/);
    expect(seen(envdRequests(log, s.podIP, cluster.envdPort, from))).toEqual([]);
  });
});

describe("envd's rules at the router (issue #35, points 1 and 3)", () => {
  it("refuses a tokenless /files with a made-up signature, and takes the SDK's signed URLs", async () => {
    // A /v1 sandbox without env vars: its envd may hold no token, and then checks nothing itself.
    const bare = await v1Sandbox();
    const bareHost = `49983-${bare.id}.${TEST_SANDBOX_DOMAIN}`;
    const from = logSize(log);
    const read = await fetchVia(bareHost, "/files?path=/etc/shadow&username=root&signature=x");
    expect(statuses(read)).toEqual([401]);
    expect(read).toMatch(/not signed/);
    const write = await fetchVia(bareHost, "/files?path=/home/user/planted&username=root&signature=v1_x", {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body: "planted",
    });
    expect(statuses(write)).toEqual([401]);
    expect(seen(envdRequests(log, bare.podIP, cluster.envdPort, from))).toEqual([]);

    // The URLs the SDK signs with the owner's token pass, expiring or not, without the token.
    const s = await ownedSandbox();
    const host = `49983-${s.id}.${TEST_SANDBOX_DOMAIN}`;
    const out = await runSdkScript(
      "e2b-signed-urls.ts",
      { E2B_API_KEY: t.key, E2B_TEST_SANDBOX: s.id },
      60_000,
    );
    const urls = JSON.parse(out.trim().split("\n").at(-1) ?? "{}") as Record<string, string>;
    for (const [upload, download, content] of [
      [urls.upload, urls.download, "signed hello"],
      [urls.uploadExpiring, urls.downloadExpiring, "signed again"],
    ] as const) {
      const up = await fetchVia(host, upload ?? "", {
        method: "POST",
        headers: { "content-type": "application/octet-stream" },
        body: content,
      });
      expect(statuses(up)).toEqual([200]);
      const down = await fetchVia(host, download ?? "");
      expect(statuses(down)).toEqual([200]);
      expect(down.endsWith(content)).toBe(true);
    }
    // A signed download URL does not upload, nor open another file.
    expect(statuses(await fetchVia(host, (urls.download ?? "").replace("signed.txt", "other.txt")))).toEqual([
      401,
    ]);
    expect(statuses(await fetchVia(host, urls.download ?? "", { method: "POST", body: "x" }))).toEqual([401]);
  });

  it("applies envd's rules on the pods' envd port by number as on 49983", async () => {
    const s = await ownedSandbox();
    expect(cluster.envdPort).not.toBe(49983);
    const host = `${cluster.envdPort}-${s.id}.${TEST_SANDBOX_DOMAIN}`;
    const from = logSize(log);
    const init = await fetchVia(host, "/init", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: INIT_BODY,
    });
    expect(statuses(init)).toEqual([404]);
    const rpc = await fetchVia(host, "/process.Process/List", {
      method: "POST",
      headers: { "content-type": "application/json", "connect-protocol-version": "1" },
      body: "{}",
    });
    expect(statuses(rpc)).toEqual([401]);
    expect(seen(envdRequests(log, s.podIP, cluster.envdPort, from))).toEqual([]);
    // With the owner's token it is envd, as on 49983.
    expect(statuses(await fetchVia(host, "/envs", { headers: { "x-access-token": s.token } }))).toEqual([
      200,
    ]);
    expect(seen(envdRequests(log, s.podIP, cluster.envdPort, from))).toEqual(["GET /envs"]);
  });
});
