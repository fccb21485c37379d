import { readFileSync } from "node:fs";
import { request } from "node:https";

/** RawResponse is a status code and the body text. */
export interface RawResponse {
  status: number;
  body: string;
}

/**
 * httpsRequest sends one HTTPS request trusting caFile; used where a test must control the
 * wire (Accept headers for server-side tables, malformed bodies for the webhooks).
 */
export function httpsRequest(
  url: string,
  caFile: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: opts.method ?? "GET", ca: readFileSync(caFile), headers: opts.headers },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          body += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end(opts.body);
  });
}
