import type { RequestOptions } from "node:https";
import { type KubeConfig, type KubernetesObject, KubernetesObjectApi } from "@kubernetes/client-node";
import { httpsRequest } from "./http.ts";

/**
 * PathResolver borrows client-node's discovery-backed REST path resolution. We do not use its
 * patch(): that serializes through the typed models, which drop JSON names such as
 * `x-kubernetes-preserve-unknown-fields`, `default` and `enum` from a CRD schema.
 */
class PathResolver extends KubernetesObjectApi {
  useNamespaceOf(kc: KubeConfig): void {
    this.setDefaultNamespace(kc);
  }

  path(obj: KubernetesObject): Promise<string> {
    return this.specUriPath(structuredClone(obj), "patch");
  }
}

/**
 * serverSideApply applies objects verbatim (server-side apply, forced, with our field manager),
 * authenticating as kc's current user whatever its kind (token, client certificate, exec).
 */
export async function serverSideApply(
  kc: KubeConfig,
  objects: KubernetesObject[],
  fieldManager: string,
): Promise<void> {
  const resolver = kc.makeApiClient(PathResolver);
  resolver.useNamespaceOf(kc);
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error("kubeconfig has no current cluster");
  for (const obj of objects) {
    const path = await resolver.path(obj);
    const url = new URL(`${server}${path}`);
    url.searchParams.set("fieldManager", fieldManager);
    url.searchParams.set("force", "true");
    const tls: RequestOptions = {};
    await kc.applyToHTTPSOptions(tls);
    const res = await httpsRequest(url, {
      method: "PATCH",
      headers: { "content-type": "application/apply-patch+yaml", accept: "application/json" },
      body: JSON.stringify(obj),
      tls,
    });
    if (res.status >= 300) {
      const message = (JSON.parse(res.body || "{}") as { message?: string }).message ?? res.body;
      throw new Error(`apply ${obj.kind} ${obj.metadata?.name}: HTTP ${res.status}: ${message}`);
    }
  }
}
