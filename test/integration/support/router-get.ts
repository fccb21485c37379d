import { request } from "node:http";

/**
 * routerGet sends GET `path` to the router's plain listener on `port` for the sandbox `host`
 * (its Host header), with `headers`; 10 s at most. The status and the body as text.
 */
export function routerGet(
  port: number,
  host: string,
  path = "/",
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, path, headers: { host, ...headers }, timeout: 10_000 },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => {
          body += d;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("timeout", () => req.destroy(new Error(`GET ${host}${path} took over 10 s`)));
    req.on("error", reject);
    req.end();
  });
}
