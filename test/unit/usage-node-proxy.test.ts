import { describe, expect, it } from "vitest";
import { KubeClient } from "../../lib/kube/client.ts";
import type { KubeRequest } from "../../lib/kube/transport.ts";
import { RESOURCE_METRICS_ANNOTATION, resourceMetricsSource } from "../../lib/usage/resource-metrics.ts";

// A Node's resource-metrics annotation is written where its own kubelet may write, and read with
// the controller's identity: neither the annotation nor the node proxy may reach past
// /api/v1/nodes/<node>/proxy/ (a confused deputy). Plain data: the requests the client would send.

/** SERVER stands for the apiserver's URL, as the transports resolve a request's path against it. */
const SERVER = "https://apiserver.invalid:6443";

/** proxyClient is a client whose transport keeps each request it is handed and answers "ok". */
function proxyClient() {
  const sent: KubeRequest[] = [];
  const client = new KubeClient(async (req) => {
    sent.push(req);
    return { status: 200, body: "ok" };
  });
  return { client, sent };
}

describe("resourceMetricsSource", () => {
  it("reads kwok's and a plain source into a proxy node and a path under metrics/", () => {
    expect(
      resourceMetricsSource("http:kwok-node-0:10247/metrics/nodes/kwok-node-0/metrics/resource"),
    ).toEqual({
      ok: true,
      proxy: "http:kwok-node-0:10247",
      path: "metrics/nodes/kwok-node-0/metrics/resource",
    });
    expect(resourceMetricsSource("node-1/metrics/resource")).toEqual({
      ok: true,
      proxy: "node-1",
      path: "metrics/resource",
    });
  });

  it.each([
    // Dot segments, which URL parsing resolves to another API path.
    "node-1/metrics/../../../../apis/agents.navix.sh/v1alpha1/sandboxpools",
    "node-1/metrics/./resource",
    "node-1/metrics/..",
    // Encoded ones, a query, a fragment, a backslash, an empty segment.
    "node-1/metrics/%2e%2e/%2e%2e/api/v1/secrets",
    "node-1/metrics/resource?x=1",
    "node-1/metrics/resource#x",
    "node-1/metrics\\..\\..\\api",
    "node-1/metrics//resource",
    "node-1/metrics/",
    // Not under metrics/, or no path at all.
    "node-1/stats/summary",
    "node-1/pods",
    "node-1/exec/ns/pod/c",
    "node-1",
    "/metrics/resource",
    // A proxy node that is no node name: dot segments, a path, upper case, a user.
    "../metrics/resource",
    "./metrics/resource",
    "..:80/metrics/resource",
    "Node-1/metrics/resource",
    "user@node-1/metrics/resource",
    "ftp:node-1/metrics/resource",
  ])("refuses %j, naming the annotation", (value) => {
    const source = resourceMetricsSource(value);
    expect(source.ok).toBe(false);
    expect(source.ok ? "" : source.error).toContain(RESOURCE_METRICS_ANNOTATION);
  });
});

describe("KubeClient.nodeProxy", () => {
  it("sends a plain path to the node's proxy, which stays there once resolved", async () => {
    const { client, sent } = proxyClient();
    await expect(client.nodeProxy("node-1", "stats/summary")).resolves.toBe("ok");
    await client.nodeProxy(
      "http:kwok-node-0:10247",
      "metrics/nodes/kwok-node-0/metrics/resource",
      "text/plain",
    );
    expect(sent.map((r) => [r.method, r.path])).toEqual([
      ["GET", "/api/v1/nodes/node-1/proxy/stats/summary"],
      ["GET", "/api/v1/nodes/http:kwok-node-0:10247/proxy/metrics/nodes/kwok-node-0/metrics/resource"],
    ]);
    for (const r of sent) expect(new URL(r.path, SERVER).pathname).toBe(r.path);
  });

  it.each([
    ["node-1", "metrics/../../../../apis/agents.navix.sh/v1alpha1/sandboxpools"],
    ["node-1", ".."],
    ["node-1", "./stats/summary"],
    ["node-1", "stats/%2e%2e/%2e%2e"],
    ["node-1", "stats/summary?watch=1"],
    ["node-1", "stats/summary#x"],
    ["node-1", "stats\\..\\..\\secrets"],
    ["node-1", "/stats/summary"],
    ["node-1", "stats//summary"],
    ["node-1", ""],
    ["..", "api/v1/secrets"],
    [".", "stats/summary"],
    ["node-1/../..", "stats/summary"],
    ["node-1%2F..", "stats/summary"],
  ])("refuses node %j path %j before sending anything", async (node, path) => {
    const { client, sent } = proxyClient();
    await expect(client.nodeProxy(node, path)).rejects.toThrow(RangeError);
    expect(sent).toEqual([]);
  });
});
