import { timingSafeEqual } from "hono/utils/buffer";
import type { Log } from "../../lib/util/log.ts";

/** MIN_ADMIN_TOKEN is the admin token's least length (config.ts): a shorter one opens nothing. */
const MIN_ADMIN_TOKEN = 16;

/**
 * misconfigured answers a request to a Worker whose bindings readWorkerEnv refused: a 500 that
 * says only that, so an unauthenticated caller learns nothing of the deployment; the errors (binding
 * names and rules, never values) go to the log, and to a caller presenting the admin token
 * (`Authorization: Bearer`, compared in constant time), when the Worker has a usable one.
 */
export async function misconfigured(
  request: Request,
  adminToken: unknown,
  errors: string[],
  log: Log,
): Promise<Response> {
  log.error({ errors }, "misconfigured");
  const presented = /^Bearer (.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1];
  const admin =
    typeof adminToken === "string" &&
    adminToken.length >= MIN_ADMIN_TOKEN &&
    presented !== undefined &&
    (await timingSafeEqual(presented, adminToken));
  const error = { code: "Misconfigured", message: "the Worker is misconfigured" };
  return Response.json({ error: admin ? { ...error, fields: errors } : error }, { status: 500 });
}
