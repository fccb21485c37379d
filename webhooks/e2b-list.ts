import { Hono } from "hono";
import type { ApiDeps } from "../functions/api/deps.ts";
import { listSandboxes } from "../functions/api/list-sandboxes.ts";
import { parseWith } from "../lib/api/parse.ts";
import { ListSandboxesV2Query, metadataQuery } from "../lib/e2b/schemas.ts";
import { type E2bSettings, e2bListed, isE2bVisible, templateIdOf } from "../lib/e2b/views.ts";
import type { E2bEnv } from "./e2b.ts";
import { fail } from "./e2b-fail.ts";

/** V1_LIST_MAX bounds the deprecated unpaginated list (it reads pages until this many). */
const V1_LIST_MAX = 1000;

/**
 * e2bListRoutes are E2B's sandbox lists: `GET /v2/sandboxes` (a page per call, the apiserver's
 * continue token as X-Next-Token) and the deprecated unpaginated `GET /sandboxes`. Both show the
 * tenant's starting and running sandboxes; paused ones never exist here, so a paused-only filter
 * is an empty list. Filters on metadata and template are applied to each page, so a page may be
 * short while X-Next-Token says there is more.
 */
export function e2bListRoutes(deps: ApiDeps, settings: E2bSettings): Hono<E2bEnv> {
  const app = new Hono<E2bEnv>();
  const readMetadata = (text: string | undefined) => {
    if (text === undefined) return {};
    try {
      return metadataQuery(text);
    } catch {
      return undefined;
    }
  };

  app.get("/v2/sandboxes", async (c) => {
    const q = parseWith(ListSandboxesV2Query, c.req.query());
    if (!q.ok) return fail(c, 400, q.issues.map((i) => `${i.path}: ${i.message}`).join("; "));
    const metadata = readMetadata(q.value.metadata);
    if (!metadata) return fail(c, 400, "metadata: must be a URL-encoded query string (k=v&k2=v2)");
    if (q.value.state && !q.value.state.includes("running")) return c.json([]);
    const page = await listSandboxes(deps, c.get("tenant"), {
      limit: q.value.limit,
      metadata,
      ...(q.value.nextToken ? { continue: q.value.nextToken } : {}),
    });
    const pods = new Map(page.pods.map((p) => [p.metadata?.name ?? "", p]));
    const listed = page.sandboxes.flatMap((view) => {
      const pod = pods.get(view.pod);
      if (!pod || !isE2bVisible(view)) return [];
      if (q.value.template && templateIdOf(pod, view) !== q.value.template) return [];
      if (q.value.startedAfter && (view.claimedAt ?? "") < q.value.startedAfter) return [];
      return [e2bListed(pod, view, settings)];
    });
    listed.sort((a, b) => (q.value.order === "asc" ? 1 : -1) * a.startedAt.localeCompare(b.startedAt));
    if (page.continue) c.header("X-Next-Token", page.continue);
    return c.json(listed);
  });

  app.get("/sandboxes", async (c) => {
    const metadata = readMetadata(c.req.query("metadata"));
    if (!metadata) return fail(c, 400, "metadata: must be a URL-encoded query string (k=v&k2=v2)");
    const listed = [];
    let next: string | undefined;
    do {
      const page = await listSandboxes(deps, c.get("tenant"), {
        limit: 500,
        metadata,
        ...(next ? { continue: next } : {}),
      });
      const pods = new Map(page.pods.map((p) => [p.metadata?.name ?? "", p]));
      for (const view of page.sandboxes) {
        const pod = pods.get(view.pod);
        if (pod && isE2bVisible(view)) listed.push(e2bListed(pod, view, settings));
      }
      next = page.continue;
    } while (next && listed.length < V1_LIST_MAX);
    return c.json(listed.slice(0, V1_LIST_MAX));
  });
  return app;
}
