import { describe, expect, it } from "vitest";
import { decideRequest, type Routing } from "../../hosts/node/data-plane/decide-request.ts";
import type { RouteTable } from "../../hosts/node/data-plane/route-table.ts";
import type { PodRoute } from "../../lib/data-plane/pod-route.ts";

/** routing answers from a route table that holds `held` and whose lookups answer `confirmed`. */
function routing(held: PodRoute | undefined, confirmed: PodRoute | undefined): Routing {
  const routes = {
    ready: true,
    synced: Promise.resolve(),
    lookup: async () => confirmed,
    route: () => confirmed,
    holds: () => held !== undefined,
  } as unknown as RouteTable;
  return {
    addressing: { domain: "sbx.test", routerNames: [] },
    routes,
    upstreams: { tokenFor: async () => "token" },
    envdPort: 49983,
    traffic: {},
  } as unknown as Routing;
}

const ROUTE: PodRoute = {
  sandboxId: "sbx-a",
  podIP: "10.0.0.7",
  namespace: "ns",
  podName: "p-0",
  podUid: "uid-1",
  runsEnvd: true,
};
const request = { host: "8080-sbx-a.sbx.test", method: "GET", target: "/", headers: {} };

describe("decideRequest on a route it could not confirm", () => {
  it("answers 503 with Retry-After, not the 502 the SDK reads as a killed sandbox", async () => {
    const decided = await decideRequest(routing(ROUTE, undefined), request);
    expect(decided).toMatchObject({ ok: false, error: { status: 503, headers: { "retry-after": "1" } } });
  });

  it("answers 502 for a sandbox it holds no route for, and forwards a confirmed one", async () => {
    expect(await decideRequest(routing(undefined, undefined), request)).toMatchObject({
      ok: false,
      error: { status: 502, body: { message: "The sandbox was not found" } },
    });
    expect(await decideRequest(routing(ROUTE, ROUTE), request)).toMatchObject({ ok: true, port: 8080 });
  });
});
