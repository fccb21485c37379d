import type { Context } from "hono";
import { Hono } from "hono";
import type { HostDeps } from "../functions/host-deps.ts";
import { badRequest, notFound, unavailable } from "../lib/claims/errors.ts";
import { historyScope, mayReadHistory } from "../lib/claims/history-scope.ts";
import { HistoryQuery } from "../lib/claims/schemas.ts";
import { parseWith } from "../lib/crd/parse-with.ts";
import { HistoryUnavailable } from "../lib/history/store.ts";
import { isSandboxId } from "../lib/lifecycle/sandbox-ids.ts";
import { type NativeEnv, send } from "./native.ts";

/**
 * historyRoutes serve the native history: `GET /v1/history`, finished sandboxes filtered by the
 * query (HistoryQuery) within the caller's scope (historyScope: a tenant sees its own records
 * only, an admin may filter by any team or user), and `GET /v1/history/{id}`, one sandbox's
 * terminal record (once it ended) and its lifecycle events (each pause and resume), oldest first.
 * A bad query, `after` cursor or id is a 400 naming its field; another tenant's sandbox is a 404,
 * as one the history never saw; a store that cannot be read is a 503 with Retry-After, never a 500.
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
      if (e instanceof HistoryUnavailable) return historyDown(c);
      throw e;
    }
  });
  app.get("/history/:id", async (c) => {
    const id = c.req.param("id");
    if (!isSandboxId(id))
      return send(
        c,
        badRequest("invalid sandbox id", [
          { path: "id", message: "must be a sandbox id (a label value: letters, digits, -_., at most 63)" },
        ]),
      );
    try {
      const [record, events] = await Promise.all([deps.history.get(id), deps.history.events(id)]);
      if (!mayReadHistory(c.get("tenant"), record, events)) return send(c, notFound(`no sandbox "${id}"`));
      return c.json({ sandboxId: id, ...(record ? { record } : {}), events });
    } catch (e) {
      if (e instanceof HistoryUnavailable) return historyDown(c);
      throw e;
    }
  });
  return app;
}

/** historyDown answers a read the history's database cannot serve now: 503, Retry-After. */
function historyDown(c: Context<NativeEnv>): Response {
  c.header("Retry-After", String(HistoryUnavailable.RETRY_AFTER_SECONDS));
  return send(
    c,
    unavailable("the history cannot be read right now (its database is unavailable); retry later"),
  );
}
