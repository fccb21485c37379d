import { Hono } from "hono";
import type { HostDeps } from "../functions/host-deps.ts";
import type { NativeEnv } from "./native.ts";

/** sandboxMetricsRoutes serve the native sandbox metrics: `GET /v1/sandboxes/{id}/metrics`. (stub: being built for issue #38.) */
export function sandboxMetricsRoutes(_deps: HostDeps): Hono<NativeEnv> {
  return new Hono<NativeEnv>();
}
