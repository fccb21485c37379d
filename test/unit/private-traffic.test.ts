import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { decideRequest, type Routing } from "../../hosts/node/data-plane/decide-request.ts";
import type { RouteTable } from "../../hosts/node/data-plane/route-table.ts";
import { Upstreams } from "../../hosts/node/data-plane/upstreams.ts";
import { envdAccessToken, importSealKeys, trafficAccessToken } from "../../lib/claims/sealing.ts";
import { type PodRoute, podRoute } from "../../lib/data-plane/pod-route.ts";

// Issue #38, point 4: a private sandbox's ports other than envd's need its traffic token, read by
// the router from the pod's mark; a router without the sealing key keeps them closed.

const ROUTE: PodRoute = {
  sandboxId: "sbx-a",
  podIP: "10.0.0.7",
  namespace: "ns",
  podName: "p-0",
  podUid: "uid-1",
  runsEnvd: true,
  privateTraffic: true,
};

/** routing answers from a table holding `route`, with tokens from `upstreams`. */
function routing(route: PodRoute, upstreams: Upstreams): Routing {
  const routes = {
    ready: true,
    synced: Promise.resolve(),
    lookup: async () => route,
    route: () => route,
    holds: () => true,
  } as unknown as RouteTable;
  return {
    addressing: { domain: "sbx.test", routerNames: [] },
    routes,
    upstreams,
    envdPort: 49983,
    traffic: {},
  } as unknown as Routing;
}

const get = (port: number, headers: Record<string, string> = {}) => ({
  host: `${port}-sbx-a.sbx.test`,
  method: "GET",
  target: "/",
  headers,
});

describe("private traffic", () => {
  it("derives a token of its own from the sealing key, never the envd token", async () => {
    const keys = await importSealKeys("k".repeat(32));
    const traffic = await trafficAccessToken(keys, "sbx-a");
    expect(traffic).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(traffic).not.toBe(await envdAccessToken(keys, "sbx-a"));
    expect(await trafficAccessToken(keys, "sbx-b")).not.toBe(traffic);
  });

  it("reads the mark from the pod into its route", () => {
    const pod: V1Pod = {
      metadata: {
        name: "p-0",
        namespace: "ns",
        uid: "u",
        labels: {
          "agentbox.navix.sh/sandbox-pool": "p",
          "agentbox.navix.sh/sandbox-id": "sbx-a",
          "agentbox.navix.sh/sandbox-phase": "running",
        },
        annotations: { "agentbox.navix.sh/sandbox-id": "sbx-a", "agentbox.navix.sh/traffic": "private" },
        ownerReferences: [
          {
            apiVersion: "agents.navix.sh/v1alpha1",
            kind: "SandboxPool",
            name: "p",
            uid: "x",
            controller: true,
          },
        ],
      },
      status: { podIP: "10.0.0.7", hostIP: "10.0.1.1" },
    };
    expect(podRoute(pod)?.privateTraffic).toBe(true);
    const { annotations: _, ...plain } = pod.metadata ?? {};
    expect(
      podRoute({ ...pod, metadata: { ...plain, annotations: { "agentbox.navix.sh/sandbox-id": "sbx-a" } } }),
    ).not.toHaveProperty("privateTraffic");
  });

  it("asks the token on other ports, not on envd's", async () => {
    const keys = await importSealKeys("k".repeat(32));
    const r = routing(ROUTE, new Upstreams(keys));
    const token = await trafficAccessToken(keys, "sbx-a");
    expect(await decideRequest(r, get(8080))).toMatchObject({ ok: false, error: { status: 403 } });
    expect(await decideRequest(r, get(8080, { "e2b-traffic-access-token": "nope" }))).toMatchObject({
      ok: false,
      error: { status: 403 },
    });
    expect(await decideRequest(r, get(8080, { "e2b-traffic-access-token": token }))).toMatchObject({
      ok: true,
      port: 8080,
    });
    const envd = await decideRequest(r, { ...get(49983), target: "/health" });
    expect(envd.ok).toBe(true);
    // A public sandbox asks nothing.
    const { privateTraffic: _, ...open } = ROUTE;
    expect(await decideRequest(routing(open, new Upstreams(keys)), get(8080))).toMatchObject({ ok: true });
  });

  it("keeps a private sandbox's ports closed on a router without the sealing key", async () => {
    const r = routing(ROUTE, new Upstreams(undefined));
    expect(await decideRequest(r, get(8080))).toMatchObject({ ok: false, error: { status: 403 } });
    expect(await decideRequest(r, get(8080, { "e2b-traffic-access-token": "anything" }))).toMatchObject({
      ok: false,
      error: { status: 403 },
    });
  });
});
