import { describe, expect, it } from "vitest";
import { nodeKubeTransport, nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import { ApiServerUnreachable } from "../../lib/kube/errors.ts";
import { kube } from "./support/kube.ts";

// The Node transport against the real apiserver: a watch callback that throws ends that watch
// with the error (it must not escape the stream's data handler and end the process), and a
// request that cannot finish within its timeout rejects as ApiServerUnreachable.
describe("the Node kube transport", () => {
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
