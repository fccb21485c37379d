import { Hono } from "hono";
import type { HostDeps } from "../functions/host-deps.ts";
import type { E2bSettings } from "../lib/e2b/answers.ts";
import type { E2bEnv } from "./e2b.ts";

/** e2bMetricsRoutes serve e2B's sandbox metrics: `GET /sandboxes/{id}/metrics` and `GET /sandboxes/metrics`. (stub: being built for issue #38.) */
export function e2bMetricsRoutes(_deps: HostDeps, _settings: E2bSettings): Hono<E2bEnv> {
  return new Hono<E2bEnv>();
}
