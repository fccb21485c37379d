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
  /** Defaults to application/json; patches say which kind they are. */
  contentType?:
    | "application/json"
    | "application/json-patch+json"
    | "application/merge-patch+json"
    | "application/apply-patch+yaml";
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

/** WatchEvent is one line of a Kubernetes watch stream. */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: unknown;
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
