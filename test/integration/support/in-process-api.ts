import { Hono } from "hono";
import { createApiKey } from "../../../functions/api/create-api-key.ts";
import type { HostDeps } from "../../../functions/host-deps.ts";
import { nodeKubeTransport, nodeKubeWatch } from "../../../hosts/node/kube-transport.ts";
import { sandboxRoutes } from "../../../http/sandboxes.ts";
import { KubeClient } from "../../../lib/kube/client.ts";
import type { KubeRequest } from "../../../lib/kube/transport.ts";
import { kube } from "./kube.ts";

/**
 * inProcessApi mounts the /v1 sandbox routes in the test's own process, as the host mounts them,
 * over a transport to the run's real apiserver that records every request it sends (`sent`), so
 * a test can count what a call cost the apiserver. `extra` adds the host's shared pieces. A test
 * may set `hooks.after`: it runs after each answer, before the caller sees it (to make a real
 * write land between a handler's read and its write).
 */
export function inProcessApi(base: HostDeps, extra: Partial<HostDeps> = {}) {
  const { kc, cluster } = kube();
  const sent: KubeRequest[] = [];
  const real = nodeKubeTransport(kc);
  const hooks: { after?: (req: KubeRequest) => Promise<void> } = {};
  const deps: HostDeps = {
    ...base,
    kube: new KubeClient(async (req) => {
      sent.push(req);
      const res = await real(req);
      await hooks.after?.(req);
      return res;
    }),
    apiKeys: { namespace: "agentbox-system", name: "agentbox-api-keys" },
    random: Math.random,
    watch: nodeKubeWatch(kc),
    // Every claim's envd /init goes where the host's does: the envd stand-in's port.
    envdPort: cluster.envdPort,
    ...extra,
  };
  const app = new Hono().route("/v1", sandboxRoutes(deps));
  return { deps, sent, app, hooks };
}

/** tenantKey mints an API key of `team` (a user "u") for in-process calls, making the keys' namespace first if needed. */
export async function tenantKey(deps: HostDeps, team: string): Promise<string> {
  await kube()
    .core.createNamespace({ body: { metadata: { name: deps.apiKeys.namespace } } })
    .catch(() => {});
  return createApiKey(deps, { team, user: "u" });
}

/** postCreate sends a create (POST /v1/sandboxes) with `key` and `body` to an in-process app. */
export function postCreate(app: Hono, key: string, body: Record<string, unknown>) {
  return app.request("/v1/sandboxes", {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}
