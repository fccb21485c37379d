import { Agent, type RequestOptions, request } from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";
import type {
  KubeRequest,
  KubeResponse,
  KubeTransport,
  KubeWatchTransport,
  WatchEvent,
} from "../../lib/kube/transport.ts";

/**
 * nodeKubeTransport reaches the API server the kubeconfig names, with its credentials of any kind
 * (client certificates, tokens, exec plugins, the in-cluster service account) as client-node's
 * KubeConfig applies them, over keep-alive HTTPS connections.
 */
export function nodeKubeTransport(kc: KubeConfig, opts: { maxSockets?: number } = {}): KubeTransport {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig has no current cluster");
  const server = cluster.server.replace(/\/$/, "");
  const agent = new Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 64 });
  return async (req: KubeRequest): Promise<KubeResponse> => {
    const url = new URL(`${server}${req.path}`);
    for (const [k, v] of Object.entries(req.query ?? {}))
      if (v !== undefined && v !== "") url.searchParams.set(k, v);
    const options: RequestOptions = {
      method: req.method,
      headers: { accept: req.accept ?? "application/json" },
    };
    await kc.applyToHTTPSOptions(options);
    // applyToHTTPSOptions makes a fresh agent per call; reuse one keep-alive pool instead (the
    // TLS material stays on the request options, which the agent's pool key includes).
    options.agent = agent;
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    if (body !== undefined) {
      options.headers = {
        ...options.headers,
        "content-type": req.contentType ?? "application/json",
        "content-length": Buffer.byteLength(body),
      };
    }
    return new Promise((resolve, reject) => {
      const r = request(url, options, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
        );
        res.on("error", reject);
      });
      r.on("error", reject);
      r.end(body);
    });
  };
}

/**
 * nodeKubeWatch streams watch requests with the kubeconfig's credentials: newline-delimited JSON
 * events, one callback each, until the callback says stop, the server ends the stream, or abort.
 */
export function nodeKubeWatch(kc: KubeConfig): KubeWatchTransport {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig has no current cluster");
  const server = cluster.server.replace(/\/$/, "");
  return async (req, onEvent, signal) => {
    const url = new URL(`${server}${req.path}`);
    for (const [k, v] of Object.entries(req.query ?? {}))
      if (v !== undefined && v !== "") url.searchParams.set(k, v);
    url.searchParams.set("watch", "1");
    const options: RequestOptions = { method: "GET", headers: { accept: "application/json" }, signal };
    await kc.applyToHTTPSOptions(options);
    await new Promise<void>((resolve, reject) => {
      const r = request(url, options, (res) => {
        if ((res.statusCode ?? 0) >= 300) {
          res.resume();
          reject(new Error(`watch ${req.path}: HTTP ${res.statusCode}`));
          return;
        }
        let buffer = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          buffer += chunk;
          let nl = buffer.indexOf("\n");
          while (nl >= 0) {
            const line = buffer.slice(0, nl).trim();
            buffer = buffer.slice(nl + 1);
            if (line && onEvent(JSON.parse(line) as WatchEvent)) {
              r.destroy();
              resolve();
              return;
            }
            nl = buffer.indexOf("\n");
          }
        });
        res.on("end", () => resolve());
        res.on("error", (e) => (signal.aborted ? resolve() : reject(e)));
      });
      r.on("error", (e) => (signal.aborted ? resolve() : reject(e)));
      r.end();
    });
  };
}
