import type { Context } from "hono";
import type { HostDeps } from "../functions/host-deps.ts";
import { fail } from "./e2b-fail.ts";

/**
 * notImplemented answers an E2B operation this control plane cannot do with E2B's 501 and
 * `message`, counted by operation in agentbox_e2b_unsupported_total, so operators see what
 * callers miss. Shared by the routers under /e2b (e2b.ts, e2b-templates.ts).
 */
export const notImplemented =
  (deps: Pick<HostDeps, "metrics">, operation: string, message: string) => (c: Context) => {
    deps.metrics?.e2bUnsupported.inc({ operation });
    return fail(c, 501, message);
  };
