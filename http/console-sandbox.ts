import type { Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { loadSandboxPage } from "../functions/console/load-sandbox-page.ts";
import type { HostDeps } from "../functions/host-deps.ts";
import type { Tenant } from "../lib/claims/api-keys.ts";
import type { Html } from "../lib/console/layout.ts";
import { sandboxMissingView, sandboxPageView } from "../lib/console/sandbox-page.ts";
import { HistoryUnavailable } from "../lib/history/store.ts";

type Show = (
  c: Context,
  title: string,
  body: Html,
  status?: ContentfulStatusCode,
) => Response | Promise<Response>;
type Vars = { Variables: { tenant: Tenant } };

/**
 * consoleSandboxRoutes adds the sandbox page to the console: `GET /sandboxes/:id` shows one of
 * the tenant's sandboxes (an admin: anyone's), running, paused (its snapshot) or ended (its
 * history record), with its pauses and resumes from the history and its CPU and memory over its
 * life from the usage store (loadSandboxPage). Another tenant's sandbox
 * is a 404 like one that does not exist; while a database cannot answer the page says so, with a
 * 503 and Retry-After when nothing could be shown.
 */
export function consoleSandboxRoutes(app: Hono<Vars>, deps: HostDeps, show: Show): void {
  app.get("/sandboxes/:id", async (c) => {
    const id = c.req.param("id");
    const p = await loadSandboxPage(deps, c.get("tenant"), id);
    if (!p) return show(c, "Sandbox", sandboxMissingView(id), 404);
    const status = p.record === "down" ? 503 : 200;
    if (status === 503) c.header("Retry-After", String(HistoryUnavailable.RETRY_AFTER_SECONDS));
    return show(c, `Sandbox ${id}`, sandboxPageView(p, deps.now()), status);
  });
}
