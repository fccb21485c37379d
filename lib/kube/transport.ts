/** KubeRequest is one API call, independent of how a host reaches the API server. */
export interface KubeRequest {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Path from the server root, e.g. /api/v1/namespaces/ns/pods. */
  path: string;
  query?: Record<string, string | undefined>;
  body?: unknown;
  /**
   * accept overrides `application/json`, e.g. to ask for metadata only
   * (PartialObjectMetadata), so a read of Secrets never carries their data.
   */
  accept?: string;
  /**
   * list marks a read of a collection: it may carry thousands of objects, so the transport gives
   * it the list timeout rather than a single read's.
   */
  list?: boolean;
  /** Defaults to application/json; patches say which kind they are. */
  contentType?:
    | "application/json"
    | "application/json-patch+json"
    | "application/merge-patch+json"
    | "application/apply-patch+yaml";
}

/**
 * KubeTimeouts bound one request, from its send to the end of its answer, by what it does (ms). A
 * request that runs out is abandoned and rejects with ApiServerUnreachable: one hung call must
 * not stall a pool's runs (or, with croner's overrun protection, every later tick).
 */
export interface KubeTimeouts {
  read: number;
  list: number;
  write: number;
}

/**
 * DEFAULT_KUBE_TIMEOUTS: a single read or write answers in milliseconds on a healthy apiserver
 * (its own request timeout is 60 s, far beyond what a waiting client should sit through); a list
 * may page through thousands of pods, so it gets longer.
 */
export const DEFAULT_KUBE_TIMEOUTS: KubeTimeouts = { read: 10_000, list: 30_000, write: 15_000 };

/** timeoutFor is the bound of one request: a list's, a read's, or a write's. */
export function timeoutFor(req: KubeRequest, timeouts: KubeTimeouts): number {
  if (req.method !== "GET") return timeouts.write;
  return req.list ? timeouts.list : timeouts.read;
}

/** KubeResponse is the status code and raw body text. */
export interface KubeResponse {
  status: number;
  body: string;
}

/**
 * KubeTransport sends one request to the API server with the host's credentials. The Node host
 * implements it with client-node's KubeConfig (any kubeconfig: client certs, tokens, exec
 * plugins, in-cluster); the Worker with fetch and a bearer token.
 */
export type KubeTransport = (req: KubeRequest) => Promise<KubeResponse>;

/** WatchEventMeta is who an event's object is, as read from its line without parsing the object. */
export interface WatchEventMeta {
  name: string;
  namespace: string;
  resourceVersion: string;
}

/**
 * WatchEvent is one line of a Kubernetes watch stream. A transport may hand `object` over lazily
 * (parsed on first read; a line that is not JSON throws then), with `meta` read from the line's
 * start (lib/kube/peek-watch-event.ts).
 */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  readonly object: unknown;
  meta?: WatchEventMeta;
}

/**
 * KubeWatchTransport streams a watch request (the request carries `watch=1`): onEvent sees each
 * event and returns true to stop. It resolves when stopped, when the server ends the stream, or
 * when signal aborts.
 */
export type KubeWatchTransport = (
  req: KubeRequest,
  onEvent: (event: WatchEvent) => boolean,
  signal: AbortSignal,
) => Promise<void>;
