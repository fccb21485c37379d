/**
 * serve.ts is the envd stand-in's HTTP server, in either of its two modes. On the host (server.ts,
 * for every kwok pod) one server on 0.0.0.0 receives what is sent to any pod IP and tells pods
 * apart by the address it was called on; each pod has an envd of its own (pods.ts). Inside a
 * container (container-main.ts) it is that sandbox's envd, over the container's own `/`. It
 * speaks the part of envd's protocol the SDK uses, with envd's access rules (auth.ts):
 *
 * - `GET /health` (204, open to all), `POST /init` ({envVars, accessToken, timestamp}: sets the
 *   token the first time, then only with that same token; env containing AGENTBOX_TEST_FAIL_INIT
 *   answers 500, a broken envd), `GET /envs` (the /init env vars), `GET|POST /files`
 *   (files-http.ts: the token header or a signature).
 * - Connect JSON RPCs of `process.Process` and `filesystem.Filesystem` (rpc.ts).
 * - Once a token is set, everything but /health, /files and /init needs `X-Access-Token`; before,
 *   nothing is checked, as on a real envd no /init has reached.
 *
 * This module imports nothing of Kubernetes, so the container's bundle carries none of it.
 */
import { appendFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AUTH_EXCLUDED_ROUTES, tokenMatches } from "./auth.ts";
import { RpcError } from "./connect.ts";
import { type FileLimits, serveFiles } from "./files-http.ts";
import { filesystemMethods } from "./filesystem-service.ts";
import {
  type CommitOutcome,
  type CommitSource,
  type InitRequest,
  type InstanceLookup,
  type Limits,
  Pods,
} from "./pods.ts";
import { processMethods } from "./process-service.ts";
import { answerRpcError, type Method, serveRpc } from "./rpc.ts";
import { SnapshotStore } from "./snapshot-store.ts";

/** ServeOptions bound what the stand-in accepts and say which mode it runs in; every field has a default. */
export interface ServeOptions {
  /** host to listen on (default 0.0.0.0: every pod IP). */
  host?: string;
  /** port (default 0: any free port). */
  port?: number;
  /** limits per sandbox (default 64 processes, 64 watchers). */
  limits?: Limits;
  /** rpcBodyBytes bounds an RPC or /init body (default 8 MiB). */
  rpcBodyBytes?: number;
  files?: FileLimits;
  /**
   * requestLog, a file path, gets one JSON line per request the stand-in receives, as it arrives
   * (RecordedRequest): tests read it to see exactly what reached envd through the router.
   */
  requestLog?: string;
  /**
   * instanceOf lets the stand-in see a pod's container restart (pod-instances.ts), so the next
   * claim's /init meets a fresh envd, as on a real pod. Without it a pod's envd never restarts:
   * a second token on the same pod IP is refused.
   */
  instanceOf?: InstanceLookup;
  /**
   * root makes the server one sandbox over this existing directory, whatever address is called
   * (inside a container: "/"); it is never removed. Absent: a fresh temporary directory per pod IP.
   */
  root?: string;
  /**
   * snapshotDir is where the per-pod stand-in keeps its snapshots (snapshot-store.ts; default a
   * `snapshots` folder under its temporary root, removed with it; a given one is kept). A
   * server over a given root keeps none.
   */
  snapshotDir?: string;
  /** log gets the stand-in's notable events, one line each (default: stderr). */
  log?: (line: string) => void;
}

/**
 * StandInSnapshots is the per-pod stand-in's side of snapshots (issue #39): commit a pod IP's
 * directory as an image of `layers` layers, count an image's layers (snapshot-store.ts), delete
 * one, or every one of a repository (stand-in-committer.ts makes a Committer of it).
 */
export interface StandInSnapshots {
  commit(podIP: string, target: string, source: CommitSource, layers: number): Promise<CommitOutcome>;
  layers(image: string): Promise<number>;
  remove(image: string): Promise<void>;
  removeRepository(repository: string): Promise<void>;
}

/** RecordedRequest is one line of the request log: the pod address called and the request head. */
export interface RecordedRequest {
  at: string;
  /** local is the pod IP the request was sent to. */
  local: string;
  method: string;
  /** target is the request target as received (path and query). */
  target: string;
  headers: Record<string, string | string[] | undefined>;
}

const METHODS: Record<string, Method> = { ...processMethods, ...filesystemMethods };

/** BodyTooLarge is a body past its bound. */
class BodyTooLarge extends Error {}

/** readBody reads a whole request body of at most max bytes. */
function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > max) {
        req.destroy();
        reject(new BodyTooLarge(`body larger than ${max} bytes`));
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

/** parseInit reads an /init body: {envVars?: {string: string}, accessToken?: string, timestamp?: RFC 3339}. */
function parseInit(body: Buffer): InitRequest {
  const v = JSON.parse(body.toString("utf8") || "{}") as {
    envVars?: unknown;
    accessToken?: unknown;
    timestamp?: unknown;
  };
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error("the body must be an object");
  const { envVars, accessToken, timestamp } = v;
  if (envVars !== undefined && envVars !== null) {
    if (typeof envVars !== "object" || Array.isArray(envVars)) throw new Error("envVars must be an object");
    for (const [k, val] of Object.entries(envVars))
      if (typeof val !== "string") throw new Error(`envVars.${k} must be a string`);
  }
  if (accessToken !== undefined && accessToken !== null && typeof accessToken !== "string")
    throw new Error("accessToken must be a string");
  let timestampMs: number | undefined;
  if (timestamp !== undefined && timestamp !== null) {
    timestampMs = typeof timestamp === "string" ? Date.parse(timestamp) : Number.NaN;
    if (Number.isNaN(timestampMs)) throw new Error("timestamp must be an RFC 3339 time");
  }
  return {
    accessToken: accessToken ?? "",
    ...(envVars ? { envVars: envVars as Record<string, string> } : {}),
    ...(timestampMs === undefined ? {} : { timestampMs }),
  };
}

/** EnvdServer is a running stand-in: its port, its server, and kill (every sandbox process, at once). */
export interface EnvdServer {
  port: number;
  server: Server;
  /** kill ends every process the sandboxes run (synchronous: usable on a signal or at exit). */
  kill: () => void;
  /** snapshots: the per-pod stand-in's snapshot store (absent over a given root). */
  snapshots?: StandInSnapshots;
}

/**
 * serveEnvd starts the stand-in; closing the server ends every sandbox and removes the files of
 * those it made (never a given root).
 */
export async function serveEnvd(options: ServeOptions = {}): Promise<EnvdServer> {
  const tempRoot = options.root ?? (await mkdtemp(join(tmpdir(), "agentbox-envd-")));
  const store =
    options.root === undefined
      ? new SnapshotStore(options.snapshotDir ?? join(tempRoot, "snapshots"))
      : undefined;
  const pods = new Pods(
    tempRoot,
    options.limits ?? { processes: 64, watchers: 64 },
    options.instanceOf,
    options.root !== undefined,
    { ...(store ? { snapshots: store } : {}), ...(options.log ? { log: options.log } : {}) },
  );
  const rpcBodyBytes = options.rpcBodyBytes ?? 8 << 20;
  const fileLimits = options.files ?? { uploadBytes: 1 << 30, multipartBytes: 256 << 20 };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const ip = req.socket.localAddress ?? "";
    const url = new URL(req.url ?? "/", "http://envd");
    const route = `${req.method} ${url.pathname}`;
    if (route === "GET /health") {
      res.writeHead(204).end();
      return;
    }
    if (route === "POST /init") {
      let init: InitRequest;
      try {
        init = parseInit(await readBody(req, rpcBodyBytes));
      } catch (e) {
        json(res, 400, { code: 400, message: `bad /init body: ${(e as Error).message}` });
        return;
      }
      const outcome = await pods.init(ip, init);
      if (outcome.ok) res.writeHead(204, { "cache-control": "no-store" }).end();
      else res.writeHead(outcome.status).end(outcome.reason);
      return;
    }
    let sbx = await pods.of(ip);
    const method = req.method === "POST" ? METHODS[url.pathname] : undefined;
    const token = req.headers["x-access-token"];
    // One the held envd would refuse may have reached a new pod at a reused IP, whose envd is
    // fresh and checks nothing yet: never stricter than the real one (pods.current).
    if (sbx.token && !tokenMatches(sbx.token, typeof token === "string" ? token : undefined))
      sbx = await pods.current(ip);
    if (
      sbx.token &&
      !AUTH_EXCLUDED_ROUTES.has(route) &&
      !tokenMatches(sbx.token, typeof token === "string" ? token : undefined)
    ) {
      req.resume();
      const message =
        "unauthorized access, please provide a valid access token or method signing if supported";
      // A 401 before any message, as envd answers: the SDK maps the status to its auth error.
      if (method) answerRpcError(res, "unary", new RpcError("unauthenticated", message));
      else json(res, 401, { code: 401, message });
      return;
    }
    if (url.pathname === "/files" && (req.method === "GET" || req.method === "POST")) {
      await serveFiles(req, res, sbx, url, fileLimits);
      return;
    }
    if (method) {
      let body: Buffer;
      try {
        body = await readBody(req, rpcBodyBytes);
      } catch (e) {
        answerRpcError(res, method.kind, new RpcError("resource_exhausted", (e as Error).message));
        return;
      }
      await serveRpc(req, res, sbx, method, body);
      return;
    }
    if (route === "GET /envs") {
      json(res, 200, sbx.envVars);
      return;
    }
    req.resume();
    json(res, 404, { code: 404, message: `no route ${route}` });
  }

  const record = (req: IncomingMessage) => {
    if (!options.requestLog) return;
    const line: RecordedRequest = {
      at: new Date().toISOString(),
      local: req.socket.localAddress ?? "",
      method: req.method ?? "",
      target: req.url ?? "",
      // The token is a secret even in a development log: whether one came is what tests read.
      headers:
        req.headers["x-access-token"] === undefined
          ? req.headers
          : { ...req.headers, "x-access-token": "[redacted]" },
    };
    appendFileSync(options.requestLog, `${JSON.stringify(line)}\n`);
  };
  const server = createServer((req, res) => {
    record(req);
    handle(req, res).catch((e: unknown) => {
      if (res.headersSent) res.destroy();
      else json(res, 500, { code: 500, message: e instanceof Error ? e.message : String(e) });
    });
  });
  // Commands run in process groups of their own, which outlive this process unless killed.
  const onExit = () => pods.killAll();
  process.once("exit", onExit);
  server.on("close", () => {
    process.off("exit", onExit);
    void pods.close();
  });
  // A port already taken rejects (EADDRINUSE), with the server closed, rather than crashing the caller.
  await new Promise<void>((resolve, reject) => {
    const failed = (e: Error) => {
      server.close();
      reject(e);
    };
    server.once("error", failed);
    server.listen(options.port ?? 0, options.host ?? "0.0.0.0", () => {
      server.off("error", failed);
      resolve();
    });
  });
  const snapshots: StandInSnapshots | undefined = store && {
    commit: (podIP, target, source, layers) => pods.commit(podIP, target, source, layers),
    layers: (image) => pods.snapshotLayers(image),
    remove: (image) => pods.removeSnapshot(image),
    removeRepository: (repository) => pods.removeSnapshotRepository(repository),
  };
  return {
    port: (server.address() as AddressInfo).port,
    server,
    kill: onExit,
    ...(snapshots ? { snapshots } : {}),
  };
}
