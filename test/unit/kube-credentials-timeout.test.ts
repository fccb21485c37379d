import { KubeConfig } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { nodeKubeTransport } from "../../hosts/node/kube-transport.ts";
import { ApiServerUnreachable } from "../../lib/kube/errors.ts";

// A kubeconfig whose exec credential plugin never answers (a real child process: `sleep`): the
// request fails within its timeout instead of hanging. No apiserver is involved: the request
// never gets that far.
describe("the Node transport's credentials", () => {
  it("bounds a hanging exec plugin by the request's timeout", async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: "c", server: "https://127.0.0.1:1", skipTLSVerify: true }],
      users: [
        {
          name: "u",
          exec: {
            apiVersion: "client.authentication.k8s.io/v1",
            command: "sleep",
            args: ["30"],
            interactiveMode: "Never",
          },
        },
      ],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    const started = Date.now();
    const error = await nodeKubeTransport(kc, { timeouts: { read: 300 } })({
      method: "GET",
      path: "/api",
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiServerUnreachable);
    expect(String(error)).toContain("the kubeconfig's credentials timed out after 300 ms");
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
