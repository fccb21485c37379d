import type { V1Pod } from "@kubernetes/client-node";
import { Hono } from "hono";
import { ContinueRejected, listSandboxes } from "../functions/api/list-sandboxes.ts";
import type { HostDeps } from "../functions/host-deps.ts";
import type { Tenant } from "../lib/claims/api-keys.ts";
import type { SandboxView } from "../lib/claims/sandbox-view.ts";
import { parseWith } from "../lib/crd/parse-with.ts";
import {
  type E2bListed,
  type E2bSettings,
  e2bListed,
  isE2bVisible,
  templateIdOf,
} from "../lib/e2b/answers.ts";
import { collectPages, type Page } from "../lib/e2b/list-pages.ts";
import { issueText, keepListed } from "../lib/e2b/requests.ts";
import { ListSandboxesV2Query, metadataQuery } from "../lib/e2b/schemas.ts";
import type { E2bEnv } from "./e2b.ts";
import { fail } from "./e2b-fail.ts";

/** V2_LIST_PAGES bounds the apiserver pages one `GET /v2/sandboxes` call reads to fill its page. */
const V2_LIST_PAGES = 10;
/**
 * V1_LIST bounds the deprecated unpaginated `GET /sandboxes` (E2B's own answers every running
 * sandbox: its teams are capped at their concurrency limit, our tenants are not): at most 1,000
 * sandboxes from at most 4 apiserver pages of 500 pods. A caller with more uses /v2's pages.
 */
const V1_LIST = { maxItems: 1000, maxPages: 4, pageSize: 500 };

/** podKey names a pod across namespaces: pools of one name in two namespaces name their pods alike. */
const podKey = (namespace: string | undefined, name: string | undefined) =>
  `${namespace ?? ""}/${name ?? ""}`;

/**
 * e2bListRoutes are E2B's sandbox lists: `GET /v2/sandboxes` (a page per call, the apiserver's
 * continue token as X-Next-Token) and the deprecated unpaginated `GET /sandboxes`. Both show the
 * tenant's starting and running sandboxes; paused ones never exist here, so a paused-only filter
 * is an empty list. Filters on metadata and template are applied to each apiserver page; a call
 * reads up to ten pages to fill its own, so a page is short only when matches are sparse. A
 * nextToken the apiserver refuses (garbled, expired) is a 400 naming it.
 */
export function e2bListRoutes(deps: HostDeps, settings: E2bSettings): Hono<E2bEnv> {
  const app = new Hono<E2bEnv>();
  const readMetadata = (text: string | undefined) => {
    if (text === undefined) return {};
    try {
      return metadataQuery(text);
    } catch {
      return undefined;
    }
  };

  /**
   * pageReader reads one apiserver page of the tenant's sandboxes (at most `pageSize`) and keeps
   * the ones `keep` accepts, in E2B's listed shape.
   */
  const pageReader =
    (
      tenant: Tenant,
      metadata: Record<string, string>,
      keep: (view: SandboxView, pod: V1Pod) => boolean,
      pageSize = Number.POSITIVE_INFINITY,
    ) =>
    async (token: string | undefined, want: number): Promise<Page<E2bListed>> => {
      const page = await listSandboxes(deps, tenant, {
        limit: Math.min(want, pageSize),
        metadata,
        ...(token ? { continue: token } : {}),
      });
      const pods = new Map(page.pods.map((p) => [podKey(p.metadata?.namespace, p.metadata?.name), p]));
      const items: E2bListed[] = [];
      for (const view of page.sandboxes) {
        const pod = pods.get(podKey(view.namespace, view.pod));
        if (pod && keep(view, pod)) items.push(e2bListed(pod, view, settings));
      }
      return { items, ...(page.continue ? { next: page.continue } : {}) };
    };

  app.get("/v2/sandboxes", async (c) => {
    const q = parseWith(ListSandboxesV2Query, c.req.query());
    if (!q.ok) return fail(c, 400, issueText(q.issues));
    const metadata = readMetadata(q.value.metadata);
    if (!metadata) return fail(c, 400, "metadata: must be a URL-encoded query string (k=v&k2=v2)");
    if (q.value.state && !q.value.state.includes("running")) return c.json([]);
    // Filters the apiserver cannot apply thin pages out, so read on (a few pages at most) until
    // the page is full: an SDK that reads one page must not get [] while matches exist.
    const read = pageReader(c.get("tenant"), metadata, (view, pod) =>
      keepListed(view, templateIdOf(pod, view), q.value, isE2bVisible(view)),
    );
    let page: Page<E2bListed>;
    try {
      page = await collectPages(read, q.value.nextToken, {
        maxItems: q.value.limit,
        maxPages: V2_LIST_PAGES,
      });
    } catch (e) {
      if (e instanceof ContinueRejected) return fail(c, 400, `nextToken: ${e.message}`);
      throw e;
    }
    const listed = page.items;
    const next = page.next;
    listed.sort((a, b) => (q.value.order === "asc" ? 1 : -1) * a.startedAt.localeCompare(b.startedAt));
    if (next) c.header("X-Next-Token", next);
    return c.json(listed);
  });

  app.get("/sandboxes", async (c) => {
    const metadata = readMetadata(c.req.query("metadata"));
    if (!metadata) return fail(c, 400, "metadata: must be a URL-encoded query string (k=v&k2=v2)");
    const read = pageReader(c.get("tenant"), metadata, (view) => isE2bVisible(view), V1_LIST.pageSize);
    return c.json((await collectPages(read, undefined, V1_LIST)).items);
  });
  return app;
}
