import { Hono } from "hono";
import type { HostDeps } from "../functions/host-deps.ts";
import type { E2bSettings } from "../lib/e2b/answers.ts";
import type { E2bEnv } from "./e2b.ts";

/** e2bLogsRoutes serve e2B's sandbox logs: `GET /sandboxes/{id}/logs` and `GET /v2/sandboxes/{id}/logs`. (stub: being built for issue #38.) */
export function e2bLogsRoutes(_deps: HostDeps, _settings: E2bSettings): Hono<E2bEnv> {
  return new Hono<E2bEnv>();
}
