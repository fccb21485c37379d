import { Hono } from "hono";
import type { HostDeps } from "../functions/host-deps.ts";
import type { NativeEnv } from "./native.ts";

/** sandboxNetworkRoutes serve the native network rules of a running sandbox: `PUT /v1/sandboxes/{id}/network`. (stub: being built for issue #38.) */
export function sandboxNetworkRoutes(_deps: HostDeps): Hono<NativeEnv> {
  return new Hono<NativeEnv>();
}
