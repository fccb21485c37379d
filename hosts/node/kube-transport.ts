import { Agent, type RequestOptions, request } from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";
import { ApiServerUnreachable } from "../../lib/kube/errors.ts";
import {
  DEFAULT_KUBE_TIMEOUTS,
  type KubeRequest,
  type KubeResponse,
  type KubeTimeouts,
  type KubeTransport,
  type KubeWatchTransport,
  timeoutFor,
} from "../../lib/kube/transport.ts";
import { watchLines } from "../../lib/kube/watch-lines.ts";
import { withTimeout } from "../../lib/util/with-timeout.ts";

/** NodeTransportOptions tune the connection pool and bound each request (DEFAULT_KUBE_TIMEOUTS). */
export interface NodeTransportOptions {
  maxSockets?: number;
  timeouts?: Partial<KubeTimeouts>;
}

/**
 * KubeAccess is where the API server is and how a request gets its credentials: a KubeConfig's
 * (kubeconfigAccess), or a thread's that asks its host for them (so the thread never loads
 * client-node, whose 24 MB of heap every full collection would mark).
 */
export interface KubeAccess {
  /** server is the API server's URL, without a trailing slash. */
  server: string;
  /** apply puts the credentials (TLS material, Authorization) on a request's options. */
  apply(options: RequestOptions): Promise<void>;
}

/** kubeconfigAccess is the kubeconfig's current API server and credentials of any kind. */
export function kubeconfigAccess(kc: KubeConfig): KubeAccess {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig has no current cluster");
  return { server: cluster.server.replace(/\/$/, ""), apply: (options) => kc.applyToHTTPSOptions(options) };
}

/** CREDENTIAL_FIELDS are the request options a kubeconfig's credentials set (a thread gets these). */
const CREDENTIAL_FIELDS = [
  "ca",
  "cert",
  "key",
  "pfx",
  "passphrase",
  "rejectUnauthorized",
  "servername",
] as const;

/** Credentials are a kubeconfig's credentials as plain data, to cross to a thread. */
export type Credentials = Pick<RequestOptions, (typeof CREDENTIAL_FIELDS)[number]> & {
  headers: Record<string, string>;
};

/** credentialsOf applies the access's credentials to blank options and keeps what they set. */
export async function credentialsOf(access: KubeAccess): Promise<Credentials> {
  const options: RequestOptions = { headers: {} };
  await access.apply(options);
  const picked: Record<string, unknown> = {};
  for (const field of CREDENTIAL_FIELDS) if (options[field] !== undefined) picked[field] = options[field];
  return { ...picked, headers: { ...(options.headers as Record<string, string>) } };
}

/** applyCredentials puts credentials from credentialsOf on a request's options. */
export function applyCredentials(options: RequestOptions, credentials: Credentials): void {
  const { headers, ...tls } = credentials;
  Object.assign(options, tls);
  options.headers = { ...(options.headers as Record<string, string>), ...headers };
}

/** accessOf takes a KubeConfig or an access as it is. */
function accessOf(source: KubeConfig | KubeAccess): KubeAccess {
  return "apply" in source ? source : kubeconfigAccess(source);
}

function urlOf(server: string, req: KubeRequest): URL {
  const url = new URL(`${server}${req.path}`);
  for (const [k, v] of Object.entries(req.query ?? {}))
    if (v !== undefined && v !== "") url.searchParams.set(k, v);
  return url;
}

/**
 * credentials applies the kubeconfig's credentials to a request within `ms`: an exec plugin (a
 * cloud CLI minting tokens) that hangs fails the request as ApiServerUnreachable instead of
 * holding it, and every request after it, forever.
 */
async function credentials(
  access: KubeAccess,
  options: RequestOptions,
  ms: number,
  host: string,
): Promise<void> {
  await withTimeout(access.apply(options), ms, "the kubeconfig's credentials").catch((e: unknown) => {
    throw new ApiServerUnreachable(
      `cannot reach the API server at ${host}: ${e instanceof Error ? e.message : String(e)}`,
    );
  });
}

/**
 * nodeKubeTransport reaches the API server the kubeconfig names, with its credentials of any kind
 * (client certificates, tokens, exec plugins, the in-cluster service account) as client-node's
 * KubeConfig applies them, over keep-alive HTTPS connections. Every request is bounded by its
 * kind's timeout (a read, a list, a write); one that runs out, and every network error, rejects
 * with ApiServerUnreachable (the API answers 503, a tick fails loudly), naming the server's host
 * and never a credential.
 */
export function nodeKubeTransport(
  source: KubeConfig | KubeAccess,
  opts: NodeTransportOptions = {},
): KubeTransport {
  const access = accessOf(source);
  const { server } = access;
  const host = new URL(server).host;
  const timeouts = { ...DEFAULT_KUBE_TIMEOUTS, ...opts.timeouts };
  const agent = new Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 64 });
  return async (req: KubeRequest): Promise<KubeResponse> => {
    const ms = timeoutFor(req, timeouts);
    const signal = AbortSignal.timeout(ms);
    const options: RequestOptions = {
      method: req.method,
      headers: { accept: req.accept ?? "application/json" },
    };
    await credentials(access, options, ms, host);
    // applyToHTTPSOptions makes a fresh agent per call; reuse one keep-alive pool instead (the
    // TLS material stays on the request options, which the agent's pool key includes).
    options.agent = agent;
    options.signal = signal;
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    if (body !== undefined) {
      options.headers = {
        ...options.headers,
        "content-type": req.contentType ?? "application/json",
        "content-length": Buffer.byteLength(body),
      };
    }
    return new Promise((resolve, reject) => {
      const unreachable = (e: Error) =>
        reject(
          new ApiServerUnreachable(
            `cannot reach the API server at ${host}: ${signal.aborted ? `no answer within ${ms} ms` : e.message}`,
          ),
        );
      const r = request(urlOf(server, req), options, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
        );
        res.on("error", unreachable);
      });
      r.on("error", unreachable);
      r.end(body);
    });
  };
}

/** WATCH_GRACE_MS is how long past its own timeoutSeconds a watch may stay open before it counts as lost. */
export const WATCH_GRACE_MS = 10_000;

/** NodeWatchOptions bound a watch: its answer's headers, and its whole life when it asks for timeoutSeconds. */
export interface NodeWatchOptions {
  /** headerTimeoutMs: no response headers within this, the watch fails (default: the read timeout). */
  headerTimeoutMs?: number;
  /** graceMs past a request's timeoutSeconds the stream is given up on (WATCH_GRACE_MS). */
  graceMs?: number;
}

/**
 * nodeKubeWatch streams watch requests with the kubeconfig's credentials: newline-delimited JSON
 * events, one callback each, until the callback says stop, the server ends the stream, or abort.
 * A line that is not JSON, or a callback that throws, ends the watch with that error (the
 * caller's promise rejects); nothing throws out of the stream's handlers. A watch is bounded
 * like every other request: an apiserver that sends no headers within headerTimeoutMs, or keeps a
 * stream open graceMs past the timeoutSeconds it asked for (a stopped apiserver, a dead
 * connection), fails it with ApiServerUnreachable, so its owner opens a new one.
 */
export function nodeKubeWatch(
  source: KubeConfig | KubeAccess,
  opts: NodeWatchOptions = {},
): KubeWatchTransport {
  const access = accessOf(source);
  const { server } = access;
  const host = new URL(server).host;
  const headerMs = opts.headerTimeoutMs ?? DEFAULT_KUBE_TIMEOUTS.read;
  return async (req, onEvent, signal) => {
    const url = urlOf(server, req);
    url.searchParams.set("watch", "1");
    const options: RequestOptions = { method: "GET", headers: { accept: "application/json" }, signal };
    await credentials(access, options, headerMs, host);
    const seconds = Number(req.query?.timeoutSeconds);
    const lifeMs = seconds > 0 ? seconds * 1000 + (opts.graceMs ?? WATCH_GRACE_MS) : undefined;
    await new Promise<void>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const settle = (e?: Error) => {
        clearTimeout(timer);
        if (e) reject(e);
        else resolve();
      };
      const lost = (why: string) => () => {
        r.destroy();
        settle(new ApiServerUnreachable(`cannot reach the API server at ${host}: watch ${req.path}: ${why}`));
      };
      const r = request(url, options, (res) => {
        clearTimeout(timer);
        if (lifeMs !== undefined)
          timer = setTimeout(lost(`still open ${lifeMs - seconds * 1000} ms past its ${seconds} s`), lifeMs);
        if ((res.statusCode ?? 0) >= 300) {
          res.resume();
          settle(new Error(`watch ${req.path}: HTTP ${res.statusCode}`));
          return;
        }
        const feed = watchLines(`watch ${req.path}`, onEvent);
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          try {
            if (!feed(chunk)) return;
            r.destroy();
            settle();
          } catch (e) {
            r.destroy();
            settle(e instanceof Error ? e : new Error(String(e)));
          }
        });
        res.on("end", () => settle());
        res.on("error", (e) => (signal.aborted ? settle() : settle(e)));
      });
      timer = setTimeout(lost(`no answer within ${headerMs} ms`), headerMs);
      r.on("error", (e) => (signal.aborted ? settle() : settle(e)));
      r.end();
    });
  };
}
