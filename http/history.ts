import { Hono } from "hono";
import type { HostDeps } from "../functions/host-deps.ts";
import { badRequest, unavailable } from "../lib/claims/errors.ts";
import { historyScope } from "../lib/claims/history-scope.ts";
import { HistoryQuery } from "../lib/claims/schemas.ts";
import { parseWith } from "../lib/crd/parse-with.ts";
import { HistoryUnavailable } from "../lib/history/store.ts";
import { type NativeEnv, send } from "./native.ts";

/**
 * historyRoutes serve the native `GET /v1/history`: finished sandboxes from the history store,
 * filtered by the query (HistoryQuery) within the caller's scope (historyScope: a tenant sees its
 * own records only, an admin may filter by any team or user). A bad query or `after` cursor is a
 * 400 naming its field; a store that cannot be read is a 503 with Retry-After, never a 500.
 */
export function historyRoutes(deps: HostDeps): Hono<NativeEnv> {
  const app = new Hono<NativeEnv>();
  app.get("/history", async (c) => {
    const q = parseWith(HistoryQuery, c.req.query());
    if (!q.ok) return send(c, badRequest("invalid query", q.issues));
    const scope = historyScope(c.get("tenant"));
    try {
      return c.json(await deps.history.query({ ...q.value, ...scope }));
    } catch (e) {
      if (e instanceof RangeError)
        return send(c, badRequest("invalid query", [{ path: "after", message: e.message }]));
      if (e instanceof HistoryUnavailable) {
        c.header("Retry-After", String(HistoryUnavailable.RETRY_AFTER_SECONDS));
        return send(
          c,
          unavailable("the history cannot be read right now (its database is unavailable); retry later"),
        );
      }
      throw e;
    }
  });
  return app;
}
