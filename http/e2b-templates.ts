import { Hono } from "hono";
import type { HostDeps } from "../functions/host-deps.ts";
import type { E2bSettings } from "../lib/e2b/answers.ts";
import type { E2bEnv } from "./e2b.ts";

/** e2bTemplatesRoutes serve e2B's templates: `GET /templates`, `GET /templates/{id}`, aliases; builds answer 501. (stub: being built for issue #38.) */
export function e2bTemplatesRoutes(_deps: HostDeps, _settings: E2bSettings): Hono<E2bEnv> {
  return new Hono<E2bEnv>();
}
