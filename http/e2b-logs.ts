import { type Context, Hono } from "hono";
import type { HostDeps } from "../functions/host-deps.ts";
import { readLogPage } from "../functions/logs/sandbox-logs.ts";
import { parseWith } from "../lib/crd/parse-with.ts";
import type { E2bSettings } from "../lib/e2b/answers.ts";
import { issueText } from "../lib/e2b/requests.ts";
import type { LogEntry } from "../lib/logs/log-entry.ts";
import { e2bEntry, e2bLogsV1, type PageQuery } from "../lib/logs/log-page.ts";
import { E2bLogsV1Query, E2bLogsV2Query, v1Page, v2Page } from "../lib/logs/log-queries.ts";
import type { E2bEnv } from "./e2b.ts";
import { fail } from "./e2b-fail.ts";

/**
 * e2bLogsRoutes serve E2B's sandbox logs: `GET /sandboxes/{id}/logs` (v1: `start`, `limit`;
 * `{logs: [{timestamp, line}], logEntries}`) and `GET /v2/sandboxes/{id}/logs` (`cursor`, `limit`,
 * `direction`, `level`, `search`; `{logs: [{timestamp, level, message, fields}]}`), from the
 * sandbox container's log since its claim and its runtimes' LogDir files (functions/logs). Only
 * the sandbox's owner reads them: anyone else, an admin key too, gets the 404 of a sandbox that
 * does not exist, as does a sandbox that is not starting or running. A bad query is a 400 naming
 * the parameter.
 */
export function e2bLogsRoutes(deps: HostDeps, _settings: E2bSettings): Hono<E2bEnv> {
  const app = new Hono<E2bEnv>();
  const serve =
    <S extends typeof E2bLogsV1Query | typeof E2bLogsV2Query>(
      schema: S,
      page: (q: Extract<ReturnType<typeof parseWith<S>>, { ok: true }>["value"]) => PageQuery,
      shape: (entries: LogEntry[]) => unknown,
    ) =>
    async (c: Context<E2bEnv>) => {
      const id = c.req.param("id") ?? "";
      const q = parseWith(schema, c.req.query());
      if (!q.ok) return fail(c, 400, issueText(q.issues));
      const entries = await readLogPage(deps, c.get("tenant"), id, page(q.value));
      if (!entries) return fail(c, 404, `sandbox "${id}" not found`);
      return c.json(shape(entries));
    };
  app.get("/sandboxes/:id/logs", serve(E2bLogsV1Query, v1Page, e2bLogsV1));
  app.get(
    "/v2/sandboxes/:id/logs",
    serve(E2bLogsV2Query, v2Page, (entries) => ({ logs: entries.map(e2bEntry) })),
  );
  return app;
}
