import { readFileSync } from "node:fs";
import { createServer, request } from "node:http";
import { connect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { type HttpsResponse, httpsRequest } from "../../../infra/cluster/http.ts";

// A CONNECT proxy the tests control: how a client that cannot resolve the sandbox domain (the
// test's `.test` names resolve nowhere) still reaches `<port>-<id>.<domain>:443` at the router's
// TLS listener, by name, with the TLS handshake (SNI, certificate check) end to end through it.

/** Target is where a tunnel goes. */
export interface Target {
  host: string;
  port: number;
}

/** ConnectProxy is a running proxy: its URL and the targets of the tunnels it opened or refused. */
export interface ConnectProxy {
  url: string;
  /** tunnels are the `host:port` of each CONNECT it accepted, in order. */
  tunnels: string[];
  /** refused are the `host:port` of each CONNECT it answered 403. */
  refused: string[];
  close(): Promise<void>;
}

/** DIAL_TIMEOUT_MS bounds the proxy's connect to a target. */
const DIAL_TIMEOUT_MS = 5_000;

/**
 * startConnectProxy serves HTTP CONNECT on 127.0.0.1: `resolve` maps the requested host and
 * port to where the tunnel really goes, or undefined to refuse it (403). Anything but CONNECT
 * answers 405. close() ends the listener and every open tunnel.
 */
export async function startConnectProxy(resolve: (host: string, port: number) => Target | undefined) {
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  };
  const server = createServer((_req, res) => {
    res.writeHead(405, { "content-type": "text/plain" }).end("CONNECT only\n");
  });
  const proxy: ConnectProxy = {
    url: "",
    tunnels: [],
    refused: [],
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
  server.on("connect", (req, client: Socket, head: Buffer) => {
    track(client);
    client.on("error", () => {});
    const authority = req.url ?? "";
    const colon = authority.lastIndexOf(":");
    const port = Number(authority.slice(colon + 1));
    const target = colon > 0 && Number.isInteger(port) ? resolve(authority.slice(0, colon), port) : undefined;
    if (!target) {
      proxy.refused.push(authority);
      client.end("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n");
      return;
    }
    const upstream = connect({ host: target.host, port: target.port, timeout: DIAL_TIMEOUT_MS });
    track(upstream);
    upstream.once("timeout", () => upstream.destroy(new Error(`dial ${authority}: timeout`)));
    let established = false;
    upstream.once("connect", () => {
      established = true;
      upstream.setTimeout(0);
      proxy.tunnels.push(authority);
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on("error", () => {
      if (established) client.destroy();
      else client.end("HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
    });
    client.on("close", () => upstream.destroy());
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  proxy.url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return proxy;
}

/**
 * openTunnel asks the proxy at proxyUrl for a tunnel to authority (`host:port`): the proxy's
 * status, and the tunnel's socket when it said 200.
 */
export function openTunnel(
  proxyUrl: string,
  authority: string,
  timeoutMs = 10_000,
): Promise<{ status: number; socket?: Socket }> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(proxyUrl);
    const req = request({ host: hostname, port, method: "CONNECT", path: authority, timeout: timeoutMs });
    req.on("connect", (res, socket) => {
      const status = res.statusCode ?? 0;
      if (status === 200) resolve({ status, socket });
      else {
        socket.destroy();
        resolve({ status });
      }
    });
    req.on("timeout", () => req.destroy(new Error(`CONNECT ${authority}: timeout`)));
    req.on("error", reject);
    req.end();
  });
}

/**
 * httpsViaProxy sends one HTTP/1.1 request to an https URL through the proxy at proxyUrl,
 * verifying the server's certificate for the URL's host against caFile (as a client that
 * resolves nothing itself does: the proxy dials, TLS runs end to end through the tunnel).
 */
export async function httpsViaProxy(
  proxyUrl: string,
  url: string,
  caFile: string,
  headers: Record<string, string> = {},
): Promise<HttpsResponse> {
  const { hostname, port } = new URL(url);
  const { status, socket } = await openTunnel(proxyUrl, `${hostname}:${port || 443}`);
  if (!socket) throw new Error(`the proxy refused ${hostname}: ${status}`);
  const ca = readFileSync(caFile);
  const tls = () => tlsConnect({ socket, servername: hostname, ca, ALPNProtocols: ["http/1.1"] });
  return httpsRequest(url, { headers, timeoutMs: 10_000, tls: { createConnection: tls } });
}
