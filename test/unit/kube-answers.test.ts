import { describe, expect, it } from "vitest";
import { KubeClient } from "../../lib/kube/client.ts";
import { ApiServerUnreachable, isApiServerTrouble, KubeError } from "../../lib/kube/errors.ts";
import { DEFAULT_KUBE_TIMEOUTS, type KubeRequest, timeoutFor } from "../../lib/kube/transport.ts";

// What the client makes of the apiserver's answers, and which bound each request gets: plain
// data in, plain data out (the transports themselves run against the real apiserver in the
// integration and fault suites).
describe("KubeClient answers", () => {
  it("turns a 2xx body that is not JSON into a KubeError naming the call", async () => {
    const seen: KubeRequest[] = [];
    const client = new KubeClient(async (req) => {
      seen.push(req);
      return { status: 200, body: "<html>proxy login</html>" };
    });
    const error = await client.getPod("ns", "p").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubeError);
    expect((error as KubeError).reason).toBe("InvalidResponse");
    expect((error as KubeError).status).toBe(502);
    expect(String(error)).toContain("with a body that is not JSON: <html>proxy login</html>");
    expect(isApiServerTrouble(error)).toBe(true);
    await client.listPods("ns", "a=b").catch(() => {});
    expect(seen.map((r) => Boolean(r.list))).toEqual([false, true]);
  });

  it("counts unreachable, 429 and 5xx as the apiserver's trouble, and 4xx refusals as the request's", () => {
    expect(isApiServerTrouble(new ApiServerUnreachable("x"))).toBe(true);
    expect(isApiServerTrouble(new KubeError(429, "TooManyRequests", "x"))).toBe(true);
    expect(isApiServerTrouble(new KubeError(503, "ServiceUnavailable", "x"))).toBe(true);
    expect(isApiServerTrouble(new KubeError(404, "NotFound", "x"))).toBe(false);
    expect(isApiServerTrouble(new KubeError(409, "Conflict", "x"))).toBe(false);
    expect(isApiServerTrouble(new Error("x"))).toBe(false);
  });
});

describe("timeoutFor", () => {
  const t = { read: 1, list: 2, write: 3 };
  it.each<[KubeRequest, number]>([
    [{ method: "GET", path: "/api/v1/namespaces/a/pods/p" }, 1],
    [{ method: "GET", path: "/api/v1/namespaces/a/pods", list: true }, 2],
    [{ method: "PATCH", path: "/api/v1/namespaces/a/pods/p" }, 3],
    [{ method: "POST", path: "/api/v1/namespaces/a/pods" }, 3],
    [{ method: "DELETE", path: "/api/v1/namespaces/a/pods/p" }, 3],
  ])("%j → %d", (req, ms) => {
    expect(timeoutFor(req, t)).toBe(ms);
  });

  it("defaults: reads 10 s, lists 30 s, writes 15 s", () => {
    expect(DEFAULT_KUBE_TIMEOUTS).toEqual({ read: 10_000, list: 30_000, write: 15_000 });
  });
});
