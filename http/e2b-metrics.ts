import { type Context, Hono } from "hono";
import type { HostDeps } from "../functions/host-deps.ts";
import { latestUsage, readUsage } from "../functions/usage/read-usage.ts";
import type { E2bSettings } from "../lib/e2b/answers.ts";
import { HistoryUnavailable } from "../lib/history/store.ts";
import { e2bMetric, sandboxIdList, unixRange } from "../lib/usage/metric-answers.ts";
import type { E2bEnv } from "./e2b.ts";
import { fail } from "./e2b-fail.ts";

/** NO_STORE says why a host without a usage store answers 501. */
const NO_STORE = "sandbox metrics are not kept by this control plane host (it has no usage store)";

/** unavailable answers a store that cannot answer now: 503 with Retry-After, E2B's shape. */
function unavailable(c: Context<E2bEnv>): Response {
  c.header("Retry-After", String(HistoryUnavailable.RETRY_AFTER_SECONDS));
  return fail(
    c,
    503,
    "sandbox metrics cannot be read right now (their database is unavailable); retry later",
  );
}

/**
 * e2bMetricsRoutes serve E2B's sandbox metrics from the usage store (samples the hosts take of
 * every claimed sandbox from its kubelet's figures, functions/usage/usage-sampler.ts):
 * `GET /sandboxes/{id}/metrics?start=&end=` (unix seconds) is the sandbox's series as
 * SandboxMetric[], oldest first, also after the sandbox ended (its owner per its history record);
 * `GET /sandboxes/metrics?sandbox_ids=a,b` is the latest sample of each of the caller's running
 * sandboxes among those named (at most 100, as E2B bounds them). Another tenant's sandbox is a 404.
 */
export function e2bMetricsRoutes(deps: HostDeps, _settings: E2bSettings): Hono<E2bEnv> {
  const app = new Hono<E2bEnv>();

  app.get("/sandboxes/metrics", async (c) => {
    const ids = sandboxIdList(c.req.query("sandbox_ids"));
    if (!ids.ok) return fail(c, 400, ids.message);
    try {
      const latest = await latestUsage(deps, c.get("tenant"), ids.ids);
      if (!latest) return fail(c, 501, NO_STORE);
      return c.json({ sandboxes: Object.fromEntries([...latest].map(([id, s]) => [id, e2bMetric(s)])) });
    } catch (e) {
      if (e instanceof HistoryUnavailable) return unavailable(c);
      throw e;
    }
  });

  app.get("/sandboxes/:id/metrics", async (c) => {
    const id = c.req.param("id");
    const range = unixRange(c.req.query("start"), c.req.query("end"));
    if (!range.ok) return fail(c, 400, `${range.field}: ${range.message}`);
    try {
      const read = await readUsage(deps, c.get("tenant"), id, range);
      if (!read.ok)
        return read.reason === "no-store"
          ? fail(c, 501, NO_STORE)
          : fail(c, 404, `sandbox "${id}" not found`);
      return c.json(read.samples.map(e2bMetric));
    } catch (e) {
      if (e instanceof HistoryUnavailable) return unavailable(c);
      throw e;
    }
  });
  return app;
}
