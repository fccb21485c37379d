import { Hono } from "hono";
import type { HostDeps } from "../functions/host-deps.ts";
import type { NativeEnv } from "./native.ts";

/** templatesRoutes serve the native template list: `GET /v1/templates`. (stub: being built for issue #38.) */
export function templatesRoutes(_deps: HostDeps): Hono<NativeEnv> {
  return new Hono<NativeEnv>();
}
