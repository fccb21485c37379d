import { Hono } from "hono";
import type { HostDeps } from "../functions/host-deps.ts";
import type { NativeEnv } from "./native.ts";

/** sandboxLogsRoutes serve the native sandbox logs: `GET /v1/sandboxes/{id}/logs` (follow mode streams). (stub: being built for issue #38.) */
export function sandboxLogsRoutes(_deps: HostDeps): Hono<NativeEnv> {
  return new Hono<NativeEnv>();
}
