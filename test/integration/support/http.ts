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
