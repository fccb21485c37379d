import { type HttpsResponse, httpsRequest as request } from "../../../infra/cluster/http.ts";

/** httpsRequest sends one request to the local cluster or test host, trusting caFile. */
export function httpsRequest(
  url: string,
  caFile: string,
  opts: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    timeoutMs?: number;
  } = {},
): Promise<HttpsResponse> {
  return request(url, { ...opts, caFile });
}

/**
 * hostV1 calls the test host's native API (`/v1<path>`) with the API key `key()` gives at call
 * time (tests mint it in beforeAll): a JSON body when one is given.
 */
export function hostV1(cluster: { hostPort: number; caCert: string }, key: () => string) {
  return (method: string, path: string, body?: unknown) =>
    httpsRequest(`https://127.0.0.1:${cluster.hostPort}/v1${path}`, cluster.caCert, {
      timeoutMs: 60_000,
      method,
      headers: { "content-type": "application/json", "x-api-key": key() },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
}
