import { Hono } from "hono";
import { setSandboxNetwork } from "../functions/api/set-network.ts";
import type { HostDeps } from "../functions/host-deps.ts";
import { badRequest, notFound } from "../lib/claims/errors.ts";
import { NetworkUpdateRequest } from "../lib/claims/schemas.ts";
import { parseWith } from "../lib/crd/parse-with.ts";
import { type NativeEnv, send } from "./native.ts";

/**
 * sandboxNetworkRoutes serve the native `PUT /v1/sandboxes/{id}/network`: the body
 * (NetworkUpdateRequest: allowOut, denyOut, allowInternetAccess) replaces the sandbox's egress
 * rules, an omitted field cleared (setSandboxNetwork); answers the settings now in force as
 * `{network}`, a 400 naming each bad field, a 404 for a sandbox the key does not own or that is
 * not live.
 */
export function sandboxNetworkRoutes(deps: HostDeps): Hono<NativeEnv> {
  const app = new Hono<NativeEnv>();
  app.put("/sandboxes/:id/network", async (c) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return send(c, badRequest("the body is not valid JSON"));
    }
    const parsed = parseWith(NetworkUpdateRequest, body);
    if (!parsed.ok) return send(c, badRequest("invalid network rules", parsed.issues));
    const outcome = await setSandboxNetwork(deps, c.get("tenant"), c.req.param("id"), parsed.value);
    if (outcome.ok) return c.json({ network: outcome.network });
    if (outcome.reason === "invalid") return send(c, badRequest(outcome.message));
    return send(c, notFound(`no sandbox "${c.req.param("id")}"`));
  });
  return app;
}
