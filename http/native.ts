import type { TimingVariables } from "hono/timing";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Tenant } from "../lib/claims/api-keys.ts";

/** NativeEnv is the /v1 API's Hono environment: the caller's tenant, set by the auth middleware. */
export type NativeEnv = { Variables: { tenant: Tenant } & TimingVariables };

/** send answers a native error (lib/claims/errors.ts): its status and its `{error}` body. */
export const send = (
  c: { json: (b: unknown, s: ContentfulStatusCode) => Response },
  e: { status: number; body: unknown },
) => c.json(e.body, e.status as ContentfulStatusCode);
