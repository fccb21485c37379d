import { Hono } from "hono";
import { listTargets } from "../functions/api/list-targets.ts";
import type { HostDeps } from "../functions/host-deps.ts";
import { templateSummaries } from "../lib/claims/template-summaries.ts";
import type { NativeEnv } from "./native.ts";

/**
 * templatesRoutes serve the native template list, `GET /v1/templates`: the templates the caller
 * may create sandboxes from (listTargets, as a create decides), each with its resources, the
 * pools and Envs that serve it and whether a create naming it would find one.
 */
export function templatesRoutes(deps: HostDeps): Hono<NativeEnv> {
  const app = new Hono<NativeEnv>();
  app.get("/templates", async (c) => {
    const tenant = c.get("tenant");
    return c.json({ templates: templateSummaries(await listTargets(deps, tenant), tenant, deps.clusterId) });
  });
  return app;
}
