import { Hono } from "hono";
import type { ApiDeps } from "../functions/api/deps.ts";
import { listSandboxes } from "../functions/api/list-sandboxes.ts";
import { parseWith } from "../lib/api/parse.ts";
import { issueText, keepListed } from "../lib/e2b/requests.ts";
import { ListSandboxesV2Query, metadataQuery } from "../lib/e2b/schemas.ts";
import { type E2bListed, type E2bSettings, e2bListed, isE2bVisible, templateIdOf } from "../lib/e2b/views.ts";
import type { E2bEnv } from "./e2b.ts";
import { fail } from "./e2b-fail.ts";

/** MAX_PAGES_PER_CALL bounds the apiserver pages one filtered list call reads. */
const MAX_PAGES_PER_CALL = 10;
/** V1_LIST_MAX bounds the deprecated unpaginated list (it reads pages until this many). */
const V1_LIST_MAX = 1000;

/** podKey names a pod across namespaces: pools of one name in two namespaces name their pods alike. */
const podKey = (namespace: string | undefined, name: string | undefined) =>
  `${namespace ?? ""}/${name ?? ""}`;

/**
 * e2bListRoutes are E2B's sandbox lists: `GET /v2/sandboxes` (a page per call, the apiserver's
 * continue token as X-Next-Token) and the deprecated unpaginated `GET /sandboxes`. Both show the
 * tenant's starting and running sandboxes; paused ones never exist here, so a paused-only filter
 * is an empty list. Filters on metadata and template are applied to each apiserver page; a call
 * reads up to ten pages to fill its own, so a page is short only when matches are sparse.
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
    if (!q.ok) return fail(c, 400, issueText(q.issues));
    const metadata = readMetadata(q.value.metadata);
    if (!metadata) return fail(c, 400, "metadata: must be a URL-encoded query string (k=v&k2=v2)");
    if (q.value.state && !q.value.state.includes("running")) return c.json([]);
    // Filters the apiserver cannot apply thin pages out, so read on (a few pages at most) until
    // the page is full: an SDK that reads one page must not get [] while matches exist.
    const listed: E2bListed[] = [];
    let next = q.value.nextToken;
    for (let pages = 0; pages < MAX_PAGES_PER_CALL && listed.length < q.value.limit; pages++) {
      const page = await listSandboxes(deps, c.get("tenant"), {
        limit: q.value.limit - listed.length,
        metadata,
        ...(next ? { continue: next } : {}),
      });
      const pods = new Map(page.pods.map((p) => [podKey(p.metadata?.namespace, p.metadata?.name), p]));
      for (const view of page.sandboxes) {
        const pod = pods.get(podKey(view.namespace, view.pod));
        if (pod && keepListed(view, templateIdOf(pod, view), q.value, isE2bVisible(view)))
          listed.push(e2bListed(pod, view, settings));
      }
      next = page.continue;
      if (!next) break;
    }
    listed.sort((a, b) => (q.value.order === "asc" ? 1 : -1) * a.startedAt.localeCompare(b.startedAt));
    if (next) c.header("X-Next-Token", next);
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
      const pods = new Map(page.pods.map((p) => [podKey(p.metadata?.namespace, p.metadata?.name), p]));
      for (const view of page.sandboxes) {
        const pod = pods.get(podKey(view.namespace, view.pod));
        if (pod && isE2bVisible(view)) listed.push(e2bListed(pod, view, settings));
      }
      next = page.continue;
    } while (next && listed.length < V1_LIST_MAX);
    return c.json(listed.slice(0, V1_LIST_MAX));
  });
  return app;
}
