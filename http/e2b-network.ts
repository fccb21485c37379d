import { Hono } from "hono";
import { setSandboxNetwork } from "../functions/api/set-network.ts";
import type { HostDeps } from "../functions/host-deps.ts";
import { parseWith } from "../lib/crd/parse-with.ts";
import type { E2bSettings } from "../lib/e2b/answers.ts";
import { issueText } from "../lib/e2b/requests.ts";
import { NetworkUpdate } from "../lib/e2b/schemas.ts";
import type { E2bEnv } from "./e2b.ts";
import { fail } from "./e2b-fail.ts";

/**
 * e2bNetworkRoutes serve E2B's `PUT /sandboxes/{id}/network`: the body as the SDK's updateNetwork
 * sends it (allowOut, denyOut, `allow_internet_access`; an omitted field is cleared) replaces the
 * sandbox's egress rules (setSandboxNetwork: its NetworkPolicy first, then its pod's label). 204,
 * or E2B's 400 naming the field, 404 for a sandbox the key does not own or that is not live.
 */
export function e2bNetworkRoutes(deps: HostDeps, _settings: E2bSettings): Hono<E2bEnv> {
  const app = new Hono<E2bEnv>();
  app.put("/sandboxes/:id/network", async (c) => {
    const text = await c.req.text();
    let body: unknown;
    try {
      body = text.trim() === "" ? undefined : JSON.parse(text);
    } catch {
      return fail(c, 400, "the body is not valid JSON");
    }
    const parsed = parseWith(NetworkUpdate, body);
    if (!parsed.ok) return fail(c, 400, issueText(parsed.issues));
    const req = parsed.value ?? {};
    const outcome = await setSandboxNetwork(deps, c.get("tenant"), c.req.param("id"), {
      ...(req.allowOut ? { allowOut: req.allowOut } : {}),
      ...(req.denyOut ? { denyOut: req.denyOut } : {}),
      ...(typeof req.allow_internet_access === "boolean"
        ? { allowInternetAccess: req.allow_internet_access }
        : {}),
    });
    if (outcome.ok) return c.body(null, 204);
    if (outcome.reason === "invalid") return fail(c, 400, outcome.message);
    return fail(c, 404, `sandbox "${c.req.param("id")}" not found`);
  });
  return app;
}
