import { Hono } from "hono";
import { stream } from "hono/streaming";
import type { HostDeps } from "../functions/host-deps.ts";
import { findLogTarget } from "../functions/logs/log-sources.ts";
import { type FollowEnd, followLogs, readLogPage } from "../functions/logs/sandbox-logs.ts";
import { type ApiError, badRequest, notFound } from "../lib/claims/errors.ts";
import { parseWith } from "../lib/crd/parse-with.ts";
import { FollowSlots } from "../lib/logs/follow-slots.ts";
import { e2bEntry } from "../lib/logs/log-page.ts";
import { NativeLogsQuery, v2Page } from "../lib/logs/log-queries.ts";
import { type NativeEnv, send } from "./native.ts";

/**
 * sandboxLogsRoutes serve the native sandbox logs, `GET /v1/sandboxes/{id}/logs`: the same page
 * as E2B's v2 (`cursor`, `limit`, `direction`, `level`, `search`; `{logs: [{timestamp, level,
 * message, fields}]}`), or with `follow=true` a stream (`application/x-ndjson`): the page's
 * entries oldest first, then each new line as it appears, one JSON object a line, and last
 * `{"end": reason}` (released, idle after `idleTimeout` seconds without a line, shutdown, or error
 * with a `message`). The client going away stops the reads. The sandbox's owner only: anyone else,
 * an admin key too, and a sandbox not starting or running get 404. A tenant holds at most
 * `slots.max` follows on this host at once (each polls the apiserver every second): one more is a
 * 429 naming the limit; a slot is freed when its follow ends, however it ends.
 */
export function sandboxLogsRoutes(deps: HostDeps, slots = new FollowSlots()): Hono<NativeEnv> {
  const app = new Hono<NativeEnv>();
  app.get("/sandboxes/:id/logs", async (c) => {
    const id = c.req.param("id");
    const q = parseWith(NativeLogsQuery, c.req.query());
    if (!q.ok) return send(c, badRequest("invalid logs query", q.issues));
    const missing = () => send(c, notFound(`sandbox ${id} not found`));
    if (q.value.follow !== "true") {
      const entries = await readLogPage(deps, c.get("tenant"), id, v2Page(q.value));
      return entries ? c.json({ logs: entries.map(e2bEntry) }) : missing();
    }
    const tenant = c.get("tenant");
    const target = await findLogTarget(deps, tenant, id);
    if (!target) return missing();
    const release = slots.take(`${tenant.team}/${tenant.user}`);
    if (!release) return send(c, tooManyFollows(slots.max));
    c.header("content-type", "application/x-ndjson; charset=utf-8");
    c.header("cache-control", "no-store");
    return stream(c, async (out) => {
      try {
        const gone = new AbortController();
        out.onAbort(() => gone.abort());
        const write = (values: unknown[]) => out.write(values.map((v) => `${JSON.stringify(v)}\n`).join(""));
        let end: FollowEnd;
        try {
          end = await followLogs(
            deps,
            tenant,
            target,
            v2Page(q.value),
            async (entries) => {
              if (entries.length > 0) await write(entries.map(e2bEntry));
            },
            { idleMs: q.value.idleTimeout * 1000, signal: AbortSignal.any([gone.signal, c.req.raw.signal]) },
          );
        } catch (e) {
          deps.log.warn({ sandbox: id, err: String(e) }, "a logs follow failed");
          end = { end: "error", message: "the follow failed; open it again" };
        }
        if (end.end !== "closed" && !out.aborted) await write([end]);
      } finally {
        release();
      }
    });
  });
  return app;
}

/** tooManyFollows (429): the tenant holds `max` follows on this host; one must end first. */
function tooManyFollows(max: number): ApiError {
  return {
    status: 429,
    body: {
      error: {
        code: "TooManyFollows",
        message: `a tenant may follow at most ${max} sandbox logs at once on this host; close one first`,
      },
    },
  };
}
