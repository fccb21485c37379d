import { readFileSync } from "node:fs";
import { type RequestOptions, request } from "node:https";

/** HttpsResponse is a status code, the response headers and the body text. */
export interface HttpsResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface HttpsRequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** CA bundle file to trust (our local cluster CA). */
  caFile?: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Further TLS/auth options, e.g. filled in by KubeConfig.applyToHTTPSOptions. */
  tls?: RequestOptions;
  timeoutMs?: number;
}

/**
 * httpsRequest sends one HTTPS request and collects the body. The cluster tooling and tests use
 * it where they must control the wire (readiness probes, server-side apply of raw objects,
 * server-side tables, malformed webhook bodies).
 */
export function httpsRequest(url: string | URL, opts: HttpsRequestOptions = {}): Promise<HttpsResponse> {
  const headers = { ...(opts.tls?.headers as Record<string, string> | undefined), ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  const options: RequestOptions = {
    ...opts.tls,
    method: opts.method ?? "GET",
    headers,
    timeout: opts.timeoutMs ?? 30_000,
    ...(opts.caFile ? { ca: readFileSync(opts.caFile) } : {}),
  };
  return new Promise((resolve, reject) => {
    const req = request(url, options, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        body += c;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("timeout", () => req.destroy(new Error(`timeout: ${String(url)}`)));
    req.on("error", reject);
    req.end(opts.body);
  });
}

/** httpsGet fetches url trusting caFile, with an optional bearer token. */
export function httpsGet(url: string, caFile: string, token?: string): Promise<HttpsResponse> {
  return httpsRequest(url, { caFile, token, timeoutMs: 5000 });
}

/** waitFor polls check until it returns true or the deadline passes, then throws with what. */
export async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (e) {
      if (e instanceof StopWaiting) throw e;
      last = e;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ""}`);
}

/** StopWaiting, thrown by a waitFor check, ends the wait at once (e.g. the process died). */
export class StopWaiting extends Error {}
