// The sandbox data plane of the Node host: a reverse proxy from `<port>-<sandboxId>.<domain>` (or
// the E2b-Sandbox-Id/Port headers) to the sandbox's pod, on two listeners: plain HTTP for
// in-cluster callers, and TLS with ALPN (HTTP/2 and HTTP/1.1) for clients, with the host's
// certificate (it must cover `*.<domain>`: the operator's wildcard certificate). Decisions are
// lib/data-plane's; where sandboxes run comes from one watch (RouteTable). node:http and
// node:http2 directly: hono's fetch path cannot forward upgrades or stream without re-wrapping.
// Every exchange is observed by Traffic (activity and metrics); ActivityWriter persists the
// activity as last-active annotations, and `activity` answers the host's idle release.
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { createSecureServer, type Http2SecureServer, type Http2Session } from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { CacheDeps } from "../../../functions/cache/cache-deps.ts";
import { importSealKeys } from "../../../lib/claims/sealing.ts";
import { dataPlaneError } from "../../../lib/data-plane/route.ts";
import type { Metrics } from "../../../lib/metrics/metrics.ts";
import type { Log } from "../../../lib/util/log.ts";
import { ActivityWriter } from "./activity-writer.ts";
import { answerClientError, writeErrorToSocket } from "./answer-error.ts";
import type { Routing } from "./decide-request.ts";
import { forwardRequest, IDLE_MS } from "./forward-request.ts";
import { forwardUpgrade } from "./forward-upgrade.ts";
import { RouteTable } from "./route-table.ts";
import { Traffic } from "./traffic.ts";
import { Upstreams } from "./upstreams.ts";
import { type Collect, YoungCollections } from "./young-collections.ts";

/** MAX_HEADER_BYTES bounds a request's head (HTTP/1.1) or header list (HTTP/2). */
const MAX_HEADER_BYTES = 16 * 1024;

/** CLOSE_GRACE_MS: on close, requests under way get this long before their connections are cut. */
const CLOSE_GRACE_MS = 3_000;

/** DataPlaneConfig is what the data plane runs with. */
export interface DataPlaneConfig {
  /** domain is the sandbox domain (host routing); unset, header routing only. */
  domain?: string;
  /** routerNames are the router's own names, where header routing applies (beside IPs, localhost). */
  routerNames?: readonly string[];
  /** sealingKey derives envd tokens; unset, envd is reachable at /health only. */
  sealingKey?: string;
  /** envdPort is where envd listens in the pods (the SDK's 49983 is sent there). */
  envdPort: number;
  /** namespace scopes the route watch (a namespace-scoped host); every namespace when unset. */
  namespace?: string;
  /** plain is the HTTP listener (in-cluster callers); port 0: any free port. */
  plain?: { host: string; port: number };
  /** tls is the TLS listener (ALPN h2, http/1.1) with the host's certificate. */
  tls?: { host: string; port: number; certFile: string; keyFile: string };
}

/** DataPlane is the running data plane. */
export interface DataPlane {
  /** activity is each routed sandbox's last activity, now for one with an open exchange. */
  activity(): ReadonlyMap<string, Date>;
  /** forget drops a released sandbox's route and connections at once (this host's release). */
  forget(sandboxId: string): void;
  /** ports are where the listeners listen (useful with port 0). */
  ports: { plain?: number; tls?: number };
  close(): Promise<void>;
}

/** Listener is one server and the connections it holds, for a graceful close. */
interface Listener {
  server: Server | Http2SecureServer;
  sockets: Set<Socket>;
  sessions: Set<Http2Session>;
}

function listen(server: Server | Http2SecureServer, host: string, port: number): Promise<Listener> {
  const listener: Listener = { server, sockets: new Set(), sessions: new Set() };
  server.on("connection", (socket: Socket) => {
    socket.on("error", () => {});
    listener.sockets.add(socket);
    socket.once("close", () => listener.sockets.delete(socket));
  });
  server.on("session", (session: Http2Session) => {
    session.on("error", () => {});
    listener.sessions.add(session);
    session.once("close", () => listener.sessions.delete(session));
  });
  server.on("clientError", (err: Error, socket: Socket) => answerClientError(err, socket));
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve(listener);
    });
  });
}

/** closeListener stops accepting, lets requests under way finish for a grace, then cuts the rest. */
async function closeListener(l: Listener): Promise<void> {
  const closed = new Promise<void>((resolve) => l.server.close(() => resolve()));
  if ("closeIdleConnections" in l.server) l.server.closeIdleConnections();
  for (const session of l.sessions) session.close();
  const grace = new Promise<void>((resolve) => setTimeout(resolve, CLOSE_GRACE_MS).unref());
  await Promise.race([closed, grace]);
  for (const session of l.sessions) session.destroy();
  for (const socket of l.sockets) socket.destroy();
  await closed;
}

/**
 * startDataPlane starts the route watch and the configured listeners; `collect` asks the process
 * for a young-generation collection (young-collections.ts), when it may.
 */
export async function startDataPlane(
  deps: Pick<CacheDeps, "kube" | "watch" | "log"> & { metrics?: Metrics | undefined },
  config: DataPlaneConfig,
  log: Log,
  collect?: Collect,
): Promise<DataPlane> {
  const upstreams = new Upstreams(config.sealingKey ? await importSealKeys(config.sealingKey) : undefined);
  // Where its process lets it (--expose-gc), the router asks for scavenges as it moves bytes.
  const young = collect ? new YoungCollections(collect) : undefined;
  const traffic = new Traffic(deps.metrics, Date.now, young ? (n) => young.moved(n) : undefined);
  const routes = new RouteTable(deps, {
    ...(config.namespace ? { namespace: config.namespace } : {}),
    onDrop: (id) => {
      upstreams.drop(id);
      traffic.forget(id);
      writer.forget(id);
    },
  });
  // onDrop runs only once the watch runs (start, below), so writer exists by then.
  const writer = new ActivityWriter(deps, routes, traffic);
  const routing: Routing = {
    addressing: {
      ...(config.domain ? { domain: config.domain } : {}),
      routerNames: (config.routerNames ?? []).map((n) => n.toLowerCase()),
    },
    routes,
    upstreams,
    envdPort: config.envdPort,
    traffic,
  };
  routes.start();
  writer.start();
  const listeners: Listener[] = [];
  const ports: DataPlane["ports"] = {};
  try {
    const servers = [
      config.plain && {
        kind: "plain" as const,
        at: config.plain,
        // Node's strict parser (never insecureHTTPParser) refuses ambiguous framing; a request's
        // headers are bounded (431 past it) and a Host is required.
        server: createServer({
          requestTimeout: 0,
          headersTimeout: 60_000,
          keepAliveTimeout: 65_000,
          maxHeaderSize: MAX_HEADER_BYTES,
          requireHostHeader: true,
          insecureHTTPParser: false,
        }),
      },
      config.tls && {
        kind: "tls" as const,
        at: config.tls,
        server: createSecureServer({
          cert: readFileSync(config.tls.certFile),
          key: readFileSync(config.tls.keyFile),
          allowHTTP1: true,
          settings: { maxHeaderListSize: MAX_HEADER_BYTES },
        }),
      },
    ];
    for (const s of servers) {
      if (!s) continue;
      const server: Server | Http2SecureServer = s.server;
      server.setTimeout(IDLE_MS);
      server.on("request", (req, res) => forwardRequest(routing, req, res, log));
      server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) =>
        forwardUpgrade(routing, req, socket, head, log),
      );
      // CONNECT (authority-form) is no request for a sandbox port: a 400, on the plain listener.
      // (On the TLS one node closes an HTTP/1.1 CONNECT; an HTTP/2 one has no path: a 400.)
      if (s.kind === "plain")
        server.on("connect", (_req: IncomingMessage, socket: Duplex) =>
          writeErrorToSocket(
            socket,
            dataPlaneError(400, "CONNECT is not forwarded: name a sandbox port in the Host and send a path"),
          ),
        );
      listeners.push(await listen(server, s.at.host, s.at.port));
      ports[s.kind] = (server.address() as AddressInfo).port;
    }
  } catch (e) {
    await writer.close();
    routes.close();
    upstreams.close();
    await Promise.all(listeners.map(closeListener));
    throw e;
  }
  return {
    activity: () => traffic.seen(),
    forget: (id) => routes.forget(id),
    ports,
    close: async () => {
      await Promise.all(listeners.map(closeListener));
      // The traffic of the last moments is written before the routes go.
      await writer.flush().catch(() => 0);
      await writer.close();
      routes.close();
      upstreams.close();
    },
  };
}
