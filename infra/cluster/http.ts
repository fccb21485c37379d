import { readFileSync } from "node:fs";
import { request } from "node:https";

/** httpsGet fetches url trusting caFile, with an optional bearer token; resolves status and body. */
export function httpsGet(
  url: string,
  caFile: string,
  token?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        ca: readFileSync(caFile),
        headers: token ? { authorization: `Bearer ${token}` } : {},
        timeout: 5000,
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          body += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("timeout", () => req.destroy(new Error(`timeout: ${url}`)));
    req.on("error", reject);
    req.end();
  });
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
