import { Hono } from "hono";
import type { HostDeps } from "../functions/host-deps.ts";
import { readUsage } from "../functions/usage/read-usage.ts";
import { badRequest, notConfigured, notFound, unavailable } from "../lib/claims/errors.ts";
import { HistoryUnavailable } from "../lib/history/store.ts";
import { nativeMetric, rfc3339Range } from "../lib/usage/metric-answers.ts";
import { type NativeEnv, send } from "./native.ts";

/**
 * sandboxMetricsRoutes serve the native sandbox metrics: `GET /v1/sandboxes/{id}/metrics?from=&to=`
 * (RFC 3339, each optional) answers `{sandboxId, metrics: [...]}`, the sandbox's samples oldest
 * first (lib/usage/metric-answers.ts nativeMetric), to whoever may see the sandbox (its owner or
 * an admin; after it ended, per its history record). Another tenant's sandbox is a 404; a store
 * that cannot answer now a 503 with Retry-After.
 */
export function sandboxMetricsRoutes(deps: HostDeps): Hono<NativeEnv> {
  const app = new Hono<NativeEnv>();
  app.get("/sandboxes/:id/metrics", async (c) => {
    const id = c.req.param("id");
    const range = rfc3339Range(c.req.query("from"), c.req.query("to"));
    if (!range.ok)
      return send(c, badRequest("invalid query", [{ path: range.field, message: range.message }]));
    try {
      const read = await readUsage(deps, c.get("tenant"), id, range);
      if (!read.ok)
        return send(
          c,
          read.reason === "no-store"
            ? notConfigured("sandbox metrics are not kept by this host (it has no usage store)")
            : notFound(`no sandbox "${id}"`),
        );
      return c.json({ sandboxId: id, metrics: read.samples.map(nativeMetric) });
    } catch (e) {
      if (!(e instanceof HistoryUnavailable)) throw e;
      c.header("Retry-After", String(HistoryUnavailable.RETRY_AFTER_SECONDS));
      return send(
        c,
        unavailable("sandbox metrics cannot be read right now (their database is unavailable); retry later"),
      );
    }
  });
  return app;
}
