import { connect } from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import { parseExposition, sampleOf } from "../../lib/metrics/parse-exposition.ts";
import { e2bSandbox } from "./support/e2b-sandbox.ts";
import { httpsRequest } from "./support/http.ts";
import { kube } from "./support/kube.ts";
import { envdRequests, logSize, rawExchange, seen, statuses } from "./support/raw-http.ts";
import { TEST_SANDBOX_DOMAIN } from "./support/sandbox-domain.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// Issue #35, point 2: the router's forward path against a table of malformed, ambiguous and
// hostile HTTP/1.x requests, each on a connection of its own to the plain listener. Each is
// refused (its answers' statuses, or the connection closed) or forwarded intact, and the envd
// stand-in's request log (every request it got, per pod IP) shows exactly the requests the client
// meant, by method and target, in order: never one more.

const { cluster } = kube();
const t = tenantPool("fuzz", "research", 1);
const log = cluster.envdRequestLog;

beforeAll(() => t.allIdle());

/** Sandbox is what a case is written against: its id, envd token and envd host name. */
interface Sandbox {
  id: string;
  token: string;
  host: string;
}

/** Case is one request (or a few on one connection) and what must come of it. */
interface Case {
  name: string;
  raw: (s: Sandbox) => string;
  /** answers: the statuses of the responses, in order ([] when the router just closes). */
  answers: number[];
  /** envd: the `METHOD target` lines the stand-in must see, in order. */
  envd: string[];
}

const head = (lines: string[]) => `${lines.join("\r\n")}\r\n\r\n`;
const chunk = (body: string) => `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
const HIDDEN = `${head(["POST /init HTTP/1.1", "Host: x", "Content-Length: 2"])}{}`;

const CASES: Case[] = [
  {
    name: "a plain GET",
    raw: (s) => head(["GET /health?c=plain HTTP/1.1", `Host: ${s.host}`, "Connection: close"]),
    answers: [204],
    envd: ["GET /health?c=plain"],
  },
  {
    name: "absolute-form",
    raw: (s) => head([`GET http://${s.host}/health HTTP/1.1`, `Host: ${s.host}`, "Connection: close"]),
    answers: [400],
    envd: [],
  },
  {
    name: "asterisk-form",
    raw: (s) => head(["OPTIONS * HTTP/1.1", `Host: ${s.host}`, "Connection: close"]),
    answers: [400],
    envd: [],
  },
  {
    name: "authority-form (CONNECT)",
    raw: (s) => head([`CONNECT ${s.host}:80 HTTP/1.1`, `Host: ${s.host}:80`]),
    answers: [400],
    envd: [],
  },
  {
    name: "a bad method",
    raw: (s) => head(["G@T /health HTTP/1.1", `Host: ${s.host}`, "Connection: close"]),
    answers: [400],
    envd: [],
  },
  {
    name: "a NUL in the target",
    raw: (s) => head(["GET /health\u0000/init HTTP/1.1", `Host: ${s.host}`, "Connection: close"]),
    answers: [400],
    envd: [],
  },
  {
    name: "extra spaces in the request line",
    raw: (s) => head(["GET  /health?c=spaces HTTP/1.1", `Host: ${s.host}`, "Connection: close"]),
    answers: [204],
    envd: ["GET /health?c=spaces"],
  },
  {
    name: "HTTP/1.0",
    raw: (s) => head(["GET /health?c=http10 HTTP/1.0", `Host: ${s.host}`]),
    answers: [204],
    envd: ["GET /health?c=http10"],
  },
  {
    name: "HTTP/0.9 (no Host)",
    raw: () => "GET /health\r\n\r\n",
    answers: [400],
    envd: [],
  },
  {
    name: "Content-Length twice, equal",
    raw: (s) =>
      `${head([
        "POST /envs HTTP/1.1",
        `Host: ${s.host}`,
        `X-Access-Token: ${s.token}`,
        "Content-Length: 2",
        "Content-Length: 2",
        "Connection: close",
      ])}{}`,
    answers: [400],
    envd: [],
  },
  {
    name: "Content-Length twice, conflicting",
    raw: (s) =>
      `${head([
        "POST /envs HTTP/1.1",
        `Host: ${s.host}`,
        `X-Access-Token: ${s.token}`,
        "Content-Length: 2",
        `Content-Length: ${2 + HIDDEN.length}`,
      ])}{}${HIDDEN}`,
    answers: [400],
    envd: [],
  },
  {
    name: "a Content-Length list",
    raw: (s) =>
      head(["POST /envs HTTP/1.1", `Host: ${s.host}`, `X-Access-Token: ${s.token}`, "Content-Length: 2, 2"]) +
      "{}",
    answers: [400],
    envd: [],
  },
  {
    name: "Content-Length with Transfer-Encoding",
    raw: (s) =>
      head([
        "GET /health HTTP/1.1",
        `Host: ${s.host}`,
        `Content-Length: ${chunk(HIDDEN).length}`,
        "Transfer-Encoding: chunked",
      ]) + chunk(HIDDEN),
    answers: [400],
    envd: [],
  },
  {
    name: "Transfer-Encoding chunked twice",
    raw: (s) =>
      head([
        "GET /health HTTP/1.1",
        `Host: ${s.host}`,
        "Transfer-Encoding: chunked",
        "Transfer-Encoding: chunked",
      ]) + chunk(HIDDEN),
    answers: [400],
    envd: [],
  },
  {
    name: "Transfer-Encoding chunked, identity",
    raw: (s) =>
      head(["GET /health HTTP/1.1", `Host: ${s.host}`, "Transfer-Encoding: chunked, identity"]) +
      chunk(HIDDEN),
    answers: [400],
    envd: [],
  },
  {
    name: "Transfer-Encoding without chunked",
    raw: (s) => head(["GET /health HTTP/1.1", `Host: ${s.host}`, "Transfer-Encoding: gzip"]) + HIDDEN,
    answers: [400],
    envd: [],
  },
  {
    name: "a chunked GET carrying a request",
    raw: (s) =>
      head([
        "GET /health?c=chunked HTTP/1.1",
        `Host: ${s.host}`,
        "Transfer-Encoding: chunked",
        "Connection: close",
      ]) + chunk(HIDDEN),
    answers: [204],
    envd: ["GET /health?c=chunked"],
  },
  {
    name: "a GET with a Content-Length body carrying a request",
    raw: (s) =>
      head([
        "GET /health?c=length HTTP/1.1",
        `Host: ${s.host}`,
        `Content-Length: ${HIDDEN.length}`,
        "Connection: close",
      ]) + HIDDEN,
    answers: [204],
    envd: ["GET /health?c=length"],
  },
  {
    name: "a bad chunk size",
    raw: (s) =>
      head(["GET /health?c=badchunk HTTP/1.1", `Host: ${s.host}`, "Transfer-Encoding: chunked"]) +
      `zz\r\n${HIDDEN}\r\n0\r\n\r\n`,
    answers: [], // the request was under way: the connection is closed, nothing forwarded
    envd: [],
  },
  {
    name: "obs-fold",
    raw: (s) => head(["GET /health HTTP/1.1", `Host: ${s.host}`, "X-Folded: a", " b", "Connection: close"]),
    answers: [400],
    envd: [],
  },
  {
    name: "bare LF line endings",
    raw: (s) => `GET /health HTTP/1.1\nHost: ${s.host}\nConnection: close\n\n`,
    answers: [400],
    envd: [],
  },
  {
    name: "oversized headers",
    raw: (s) =>
      head(["GET /health HTTP/1.1", `Host: ${s.host}`, `X-Big: ${"a".repeat(20_000)}`, "Connection: close"]),
    answers: [431],
    envd: [],
  },
  {
    name: "two requests pipelined",
    raw: (s) =>
      head(["GET /health?c=first HTTP/1.1", `Host: ${s.host}`]) +
      head(["GET /health?c=second HTTP/1.1", `Host: ${s.host}`, "Connection: close"]),
    answers: [204, 204],
    envd: ["GET /health?c=first", "GET /health?c=second"],
  },
  {
    name: "an upgrade with a body",
    raw: (s) =>
      head([
        "GET /health HTTP/1.1",
        `Host: ${s.host}`,
        "Connection: upgrade",
        "Upgrade: websocket",
        `Content-Length: ${HIDDEN.length}`,
      ]) + HIDDEN,
    answers: [400],
    envd: [],
  },
  ...["0", "65536", "49983x", "049983", "-1"].map(
    (port): Case => ({
      name: `port ${port}`,
      raw: (s) =>
        head(["GET /health HTTP/1.1", `Host: ${port}-${s.id}.${TEST_SANDBOX_DOMAIN}`, "Connection: close"]),
      answers: [400],
      envd: [],
    }),
  ),
  ...["0", "65536", "49983x", "+49983", "49983, 49983"].map(
    (port): Case => ({
      name: `header-routed port ${JSON.stringify(port)}`,
      raw: (s) =>
        head([
          "GET /health HTTP/1.1",
          "Host: 127.0.0.1",
          `E2b-Sandbox-Id: ${s.id}`,
          `E2b-Sandbox-Port: ${port}`,
          "Connection: close",
        ]),
      answers: [400],
      envd: [],
    }),
  ),
  ...[
    () => "evil.example.com",
    (s: Sandbox) => `${s.host}.evil.example.com`,
    (s: Sandbox) => `user@${s.host}`,
    (s: Sandbox) => `49983-${s.id}-x.y.${TEST_SANDBOX_DOMAIN}`,
    () => "",
  ].map(
    (host, i): Case => ({
      name: `bad host ${i}`,
      raw: (s) => head(["GET /health HTTP/1.1", `Host: ${host(s)}`, "Connection: close"]),
      answers: [400],
      envd: [],
    }),
  ),
  {
    name: "two Hosts (the first names the sandbox)",
    raw: (s) =>
      head([
        "GET /health?c=hosts HTTP/1.1",
        `Host: ${s.host}`,
        "Host: evil.example.com",
        "Connection: close",
      ]),
    answers: [204],
    envd: ["GET /health?c=hosts"],
  },
  {
    name: "X-Access-Token twice",
    raw: (s) =>
      head([
        "GET /envs HTTP/1.1",
        `Host: ${s.host}`,
        `X-Access-Token: ${s.token}`,
        "X-Access-Token: x",
        "Connection: close",
      ]),
    answers: [401],
    envd: [],
  },
  {
    name: "no Host",
    raw: () => head(["GET /health HTTP/1.1", "Connection: close"]),
    answers: [400],
    envd: [],
  },
];

describe("the router's forward path, fuzzed", () => {
  it("refuses each malformed request or forwards it intact: envd sees exactly what was sent", async () => {
    const { id: sandboxID, token: envdAccessToken, podIP } = await e2bSandbox(cluster, t);
    const s: Sandbox = {
      id: sandboxID,
      token: envdAccessToken,
      host: `49983-${sandboxID}.${TEST_SANDBOX_DOMAIN}`,
    };
    const outcomes: { name: string; answers: number[]; envd: string[] }[] = [];
    for (const c of CASES) {
      const from = logSize(log);
      const raw = await rawExchange(cluster.dataPlanePort, c.raw(s));
      outcomes.push({
        name: c.name,
        answers: statuses(raw),
        envd: seen(envdRequests(log, podIP, cluster.envdPort, from)),
      });
    }
    expect(outcomes).toEqual(CASES.map((c) => ({ name: c.name, answers: c.answers, envd: c.envd })));
    // And the sandbox is still its owner's: nothing reset its token.
    const from = logSize(log);
    const owner = await rawExchange(
      cluster.dataPlanePort,
      head(["GET /envs HTTP/1.1", `Host: ${s.host}`, `X-Access-Token: ${s.token}`, "Connection: close"]),
    );
    expect(statuses(owner)).toEqual([200]);
    expect(seen(envdRequests(log, podIP, cluster.envdPort, from))).toEqual(["GET /envs"]);
  });
});

/** routerRestarts is how often the test host restarted its router, from its /metrics. */
async function routerRestarts(): Promise<number> {
  const res = await httpsRequest(`https://127.0.0.1:${cluster.hostPort}/metrics`, cluster.caCert, {
    timeoutMs: 10_000,
    headers: { authorization: `Bearer ${cluster.metricsToken}` },
  });
  expect(res.status).toBe(200);
  return sampleOf(parseExposition(res.body), "agentbox_dataplane_thread_restarts_total") ?? 0;
}

/** connectThenReset sends a CONNECT, waits for the router's answer to begin, then resets the connection. */
function connectThenReset(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(head(["CONNECT a:1 HTTP/1.1", "Host: a"])));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error("the router did not answer the CONNECT"));
    }, 10_000);
    socket.setEncoding("latin1");
    socket.once("data", (d: string) => {
      clearTimeout(timer);
      socket.resetAndDestroy();
      resolve(d);
    });
    socket.on("error", () => {});
  });
}

describe("the router's own sockets", () => {
  it("a client that resets a refused CONNECT does not take the router down", async () => {
    const before = await routerRestarts();
    for (let i = 0; i < 3; i++)
      expect(statuses(await connectThenReset(cluster.dataPlanePort))).toEqual([400]);
    // The resets reached the router before this request: it still answers, on its first life.
    const after = await rawExchange(
      cluster.dataPlanePort,
      head(["GET /health HTTP/1.1", `Host: 49983-unknown.${TEST_SANDBOX_DOMAIN}`, "Connection: close"]),
    );
    expect(statuses(after)).toEqual([502]);
    expect(await routerRestarts()).toBe(before);
  });
});
