import { Hono, type MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import type { Metrics } from "../lib/metrics/metrics.ts";
import { requireToken } from "../webhooks/require-token.ts";

/**
 * httpMetrics counts and times every request by method and route template (the path a route was
 * registered with, "/v1/sandboxes/:id", never the raw path, so sandbox IDs do not become series),
 * and by status code.
 */
export function httpMetrics(metrics: Metrics): MiddlewareHandler {
  return async (c, next) => {
    const t0 = performance.now();
    await next();
    const labels = { method: c.req.method, route: routePath(c, -1) };
    metrics.httpRequests.inc({ ...labels, code: String(c.res.status) });
    metrics.httpDuration.observe(labels, (performance.now() - t0) / 1000);
  };
}

/** Scrape is what /metrics serves: a bearer token and the exposition text, collected per scrape. */
export interface Scrape {
  token: string;
  collect(): Promise<{ contentType: string; body: string }>;
}

/**
 * metricsRoutes serves the Prometheus exposition under a bearer token (the host's metrics token,
 * else its admin token): the host's threads' metrics, merged by `collect`.
 */
export function metricsRoutes(scrape: Scrape): Hono {
  const app = new Hono();
  app.use("*", requireToken(scrape.token));
  app.get("/", async (c) => {
    const { contentType, body } = await scrape.collect();
    return c.body(body, 200, { "content-type": contentType });
  });
  return app;
}
