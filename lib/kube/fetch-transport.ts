// The API-server transport over fetch with a bearer token: what the Worker uses (workerd's fetch
// has no custom CAs or client certificates, so the apiserver is reached through a tunnel with a
// publicly trusted certificate, or an mTLS certificate binding whose fetcher is passed in).
// Runtime-neutral: fetch, URL, TextDecoder only.
import { ApiServerUnreachable } from "./errors.ts";
import {
  DEFAULT_KUBE_TIMEOUTS,
  type KubeRequest,
  type KubeTimeouts,
  type KubeTransport,
  type KubeWatchTransport,
  timeoutFor,
} from "./transport.ts";
import { watchLines } from "./watch-lines.ts";

/** FetchKubeOptions say where the apiserver is and how to reach it. */
export interface FetchKubeOptions {
  /** server is the apiserver's base URL, e.g. https://kube.example.com (no trailing path). */
  server: string;
  /** token is sent as `Authorization: Bearer`; never logged. */
  token: string;
  /** fetch reaches the server: globalThis.fetch, or an mTLS binding's fetch. */
  fetch: typeof fetch;
  /** timeoutMs bounds every non-watch request alike; without it, timeouts by kind apply. */
  timeoutMs?: number;
  /** timeouts bound reads, lists and writes (DEFAULT_KUBE_TIMEOUTS). */
  timeouts?: Partial<KubeTimeouts>;
}

/** requestUrl joins the server, the path and the defined query parameters. */
export function requestUrl(server: string, req: KubeRequest, extra: Record<string, string> = {}): string {
  const url = new URL(`${server.replace(/\/+$/, "")}${req.path}`);
  for (const [k, v] of Object.entries({ ...req.query, ...extra }))
    if (v !== undefined) url.searchParams.set(k, v);
  return url.toString();
}

function init(opts: FetchKubeOptions, req: KubeRequest, signal: AbortSignal): RequestInit {
  return {
    method: req.method,
    headers: {
      authorization: `Bearer ${opts.token}`,
      accept: req.accept ?? "application/json",
      ...(req.body !== undefined ? { "content-type": req.contentType ?? "application/json" } : {}),
    },
    ...(req.body !== undefined ? { body: JSON.stringify(req.body) } : {}),
    signal,
  };
}

/**
 * fetchKubeTransport sends each request with fetch; statuses and bodies come back as they are,
 * so KubeClient maps 404, 409 and 422 to the same typed errors as in the Node host. A network
 * failure, a timeout, or a 5xx that is not the apiserver's own (a tunnel or proxy answering for
 * it) rejects with ApiServerUnreachable, naming the server, never the token.
 */
export function fetchKubeTransport(opts: FetchKubeOptions): KubeTransport {
  const timeouts = { ...DEFAULT_KUBE_TIMEOUTS, ...opts.timeouts };
  return async (req) => {
    const signal = AbortSignal.timeout(opts.timeoutMs ?? timeoutFor(req, timeouts));
    let res: Response;
    try {
      res = await opts.fetch(requestUrl(opts.server, req), init(opts, req, signal));
    } catch (e) {
      const why = signal.aborted ? "timed out" : (e as Error).message;
      throw new ApiServerUnreachable(`cannot reach the API server at ${new URL(opts.server).host}: ${why}`);
    }
    const body = await res.text().catch((e: unknown) => {
      throw new ApiServerUnreachable(
        `the API server at ${new URL(opts.server).host} stopped answering: ${signal.aborted ? "timed out" : String(e)}`,
      );
    });
    if (res.status >= 500 && !isKubeStatus(body))
      throw new ApiServerUnreachable(
        `the API server at ${new URL(opts.server).host} answered ${res.status} without a Kubernetes status (is the tunnel up?)`,
      );
    return { status: res.status, body };
  };
}

/** isKubeStatus: the body is a metav1.Status, i.e. the apiserver itself answered. */
function isKubeStatus(body: string): boolean {
  try {
    return (JSON.parse(body) as { kind?: unknown }).kind === "Status";
  } catch {
    return false;
  }
}

/**
 * fetchKubeWatch streams a watch (newline-delimited JSON events) with fetch, handing each event
 * to onEvent until it returns true, the server ends the stream, or signal aborts.
 */
export function fetchKubeWatch(opts: FetchKubeOptions): KubeWatchTransport {
  return async (req, onEvent, signal) => {
    let res: Response;
    try {
      res = await opts.fetch(requestUrl(opts.server, req, { watch: "1" }), init(opts, req, signal));
    } catch (e) {
      if (signal.aborted) return;
      throw e;
    }
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      onEvent({ type: "ERROR", object: { code: res.status } });
      return;
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    const feed = watchLines(`watch ${req.path}`, onEvent);
    try {
      while (true) {
        const { done, value } = await reader.read();
        if (done || feed(decoder.decode(value, { stream: true }))) return;
      }
    } catch (e) {
      if (!signal.aborted) throw e;
    } finally {
      await reader.cancel().catch(() => {});
    }
  };
}
