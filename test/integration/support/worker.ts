import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import { promisify } from "node:util";
import { Miniflare } from "miniflare";
import type { TestCluster } from "../global-setup.ts";
import { migrationStatements } from "./d1-migrations.ts";

/** KUBE_HOST is the name the Worker calls the apiserver by; the tunnel below answers for it. */
export const KUBE_HOST = "kube.test";
/** DOWN_HOST is an apiserver name whose tunnel is down (every request fails at the network). */
export const DOWN_HOST = "down.test";

/**
 * buildWorker bundles hosts/worker/index.ts exactly as `wrangler deploy` would (--dry-run, so
 * nothing is uploaded) and returns the bundle's path.
 */
export async function buildWorker(): Promise<string> {
  const out = await mkdtemp(join(tmpdir(), "agentbox-worker-"));
  await promisify(execFile)(
    process.execPath,
    ["node_modules/wrangler/bin/wrangler.js", "deploy", "--dry-run", "--outdir", out],
    { env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" }, timeout: 120_000 },
  );
  return join(out, "index.js");
}

/**
 * tunnel stands in for the Cloudflare Tunnel in front of the apiserver: Miniflare hands it every
 * outbound request of the Worker; requests to KUBE_HOST go to the local apiserver (trusting its
 * CA), streamed both ways so watches work; requests to DOWN_HOST fail like a dead tunnel; anything
 * else (a pod's envd on its loopback IP) is fetched as is. seen, when given, is told of each
 * request first (a test counts the Worker's apiserver requests with it).
 */
export function tunnel(cluster: TestCluster, seen?: (req: Request) => void) {
  const target = new URL(cluster.server);
  const ca = readFileSync(cluster.caCert);
  return async (req: Request): Promise<Response> => {
    seen?.(req);
    const url = new URL(req.url);
    if (url.hostname === DOWN_HOST) throw new Error("connection refused");
    const body = req.body ? Buffer.from(await req.arrayBuffer()) : undefined;
    // A pod's envd (post-start hooks): Node's fetch takes the buffered body, not workerd's stream.
    if (url.hostname !== KUBE_HOST)
      return fetch(req.url, {
        method: req.method,
        headers: req.headers,
        ...(body ? { body } : {}),
        signal: AbortSignal.timeout(30_000),
      });
    return new Promise<Response>((resolve, reject) => {
      const headers = Object.fromEntries(req.headers);
      delete headers.host;
      const out = request(
        {
          host: target.hostname,
          port: target.port,
          path: `${url.pathname}${url.search}`,
          method: req.method,
          headers,
          ca,
        },
        (res) => {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") h.set(k, v);
          resolve(
            new Response(Readable.toWeb(res) as ReadableStream, {
              status: res.statusCode ?? 502,
              headers: h,
            }),
          );
        },
      );
      out.on("error", reject);
      out.end(body);
    });
  };
}

/** WorkerBindings are the vars and secrets a test Worker gets (see hosts/worker/config.ts). */
export function workerBindings(cluster: TestCluster, over: Record<string, string | undefined> = {}) {
  const bindings: Record<string, string> = {};
  const all = {
    KUBE_API_URL: `https://${KUBE_HOST}`,
    KUBE_TOKEN: cluster.adminToken,
    CALLBACK_TOKEN: cluster.callbackToken,
    ADMIN_TOKEN: cluster.functionsToken,
    SEALING_KEY: cluster.sealingKey,
    ENVD_PORT: String(cluster.envdPort),
    TICK_PASSES: "1",
    ...over,
  };
  for (const [k, v] of Object.entries(all)) if (v !== undefined) bindings[k] = v;
  return bindings;
}

/**
 * startWorker runs the bundle in workerd (Miniflare) with the tunnel and a D1 database brought up
 * to date by the migrations, as a deployment's is (`wrangler d1 migrations apply`) before the
 * Worker serves. seen goes to the tunnel.
 */
export async function startWorker(
  script: string,
  cluster: TestCluster,
  over: Record<string, string | undefined> = {},
  seen?: (req: Request) => void,
): Promise<Miniflare> {
  const mf = new Miniflare({
    modules: true,
    scriptPath: script,
    modulesRoot: dirname(script),
    compatibilityDate: "2026-07-01",
    bindings: workerBindings(cluster, over),
    d1Databases: ["HISTORY"],
    outboundService: tunnel(cluster, seen),
  });
  const d1 = await mf.getD1Database("HISTORY");
  await d1.batch(migrationStatements().map((s) => d1.prepare(s)));
  return mf;
}

/** ScheduledResult is what a cron invocation reports: "ok", or how it failed. */
export interface ScheduledResult {
  outcome: string;
  noRetry: boolean;
}

/** cron fires the Worker's scheduled handler once, as Workers cron would. */
export async function cron(mf: Miniflare): Promise<ScheduledResult> {
  const worker = (await mf.getWorker()) as unknown as {
    scheduled(opts: { cron: string }): Promise<ScheduledResult>;
  };
  return worker.scheduled({ cron: "* * * * *" });
}

/** dispatch sends one request to the Worker (Miniflare's own Request types aside). */
export async function dispatch(
  mf: Miniflare,
  path: string,
  init: { method?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; json: () => Promise<unknown>; text: () => Promise<string> }> {
  const res = await mf.dispatchFetch(`https://worker.test${path}`, init);
  return { status: res.status, json: () => res.json(), text: () => res.text() };
}
