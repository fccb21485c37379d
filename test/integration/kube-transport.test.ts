import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { nodeKubeTransport, nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import { ApiServerUnreachable } from "../../lib/kube/errors.ts";
import type { WatchEvent } from "../../lib/kube/transport.ts";
import { kube } from "./support/kube.ts";

// The Node transport against the real apiserver: a watch callback that throws ends that watch
// with the error (it must not escape the stream's data handler and end the process), and a
// request that cannot finish within its timeout rejects as ApiServerUnreachable; and the lines a
// real apiserver writes are the ones peekWatchEvent reads without a parse (issue #25: a view that
// only needs who changed must not fall back to parsing every event unnoticed).
describe("the Node kube transport", () => {
  it("hands over the apiserver's events with meta read from their lines, and objects to match", async () => {
    const { kc, core } = kube();
    const created = await core.createNamespacedConfigMap({
      namespace: "default",
      body: { metadata: { generateName: "peek-" }, data: { a: "b" } },
    });
    const name = created.metadata?.name ?? "";
    await core.patchNamespacedConfigMap(
      { name, namespace: "default", body: [{ op: "add", path: "/data/c", value: "d" }] },
      setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
    );
    await core.deleteNamespacedConfigMap({ name, namespace: "default" });
    const seen: WatchEvent[] = [];
    const controller = new AbortController();
    await nodeKubeWatch(kc)(
      {
        method: "GET",
        path: "/api/v1/namespaces/default/configmaps",
        query: {
          fieldSelector: `metadata.name=${name}`,
          resourceVersion: created.metadata?.resourceVersion,
          timeoutSeconds: "20",
        },
      },
      (e) => {
        seen.push(e);
        return e.type === "DELETED";
      },
      controller.signal,
    );
    expect(seen.map((e) => e.type)).toEqual(["MODIFIED", "DELETED"]);
    const deleted = seen.at(-1);
    expect(seen.every((e) => e.meta?.name === name && e.meta.namespace === "default")).toBe(true);
    const object = deleted?.object as { metadata: { resourceVersion: string } };
    expect(deleted?.meta?.resourceVersion).toBe(object.metadata.resourceVersion);
  });

  it("ends a watch whose callback throws with that error", async () => {
    const { kc } = kube();
    const watch = nodeKubeWatch(kc);
    const controller = new AbortController();
    let calls = 0;
    const outcome = await watch(
      { method: "GET", path: "/api/v1/namespaces" },
      () => {
        calls++;
        throw new Error("callback failed");
      },
      controller.signal,
    ).then(
      () => "resolved",
      (e: unknown) => String(e),
    );
    controller.abort();
    expect(outcome).toBe("Error: callback failed");
    expect(calls).toBe(1);
  });

  it("rejects a request that outlives its timeout as ApiServerUnreachable, naming the bound", async () => {
    const { kc } = kube();
    // A read bounded at 1 ms cannot finish in time, even on loopback (the apiserver stopped for
    // seconds is in the fault suite, test/faults/apiserver-outage.test.ts).
    const transport = nodeKubeTransport(kc, { timeouts: { read: 1 } });
    const error = await transport({ method: "GET", path: "/api/v1/namespaces/default" }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApiServerUnreachable);
    expect(String(error)).toMatch(/cannot reach the API server at 127\.0\.0\.1:\d+: no answer within 1 ms/);
    const fine = await nodeKubeTransport(kc)({ method: "GET", path: "/api/v1/namespaces/default" });
    expect(fine.status).toBe(200);
  });
});
