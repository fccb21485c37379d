// The Cloudflare Worker host: the same hono app as the Node host. Issue #5 adds the scheduled
// ticks, the API-server transport for workerd and the tests inside workerd.
import { consoleLog } from "../../lib/log.ts";
import { createApp } from "../app.ts";

export interface Env {
  /** Bearer token the apiserver presents to the admission and audit endpoints (a secret). */
  CALLBACK_TOKEN: string;
}

export default {
  fetch(request: Request, env: Env): Response | Promise<Response> {
    if (!env.CALLBACK_TOKEN) {
      return Response.json(
        { error: { code: "Misconfigured", message: "the CALLBACK_TOKEN secret is not set" } },
        { status: 500 },
      );
    }
    return createApp({ callbackToken: env.CALLBACK_TOKEN, logger: consoleLog({ host: "worker" }) }).fetch(
      request,
      env,
    );
  },
};
