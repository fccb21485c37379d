import type { V1Pod } from "@kubernetes/client-node";
import { Hono } from "hono";
import { ContinueRejected, listSandboxes } from "../functions/api/list-sandboxes.ts";
import type { HostDeps } from "../functions/host-deps.ts";
import { listPaused } from "../functions/snapshots/find-paused.ts";
import type { Tenant } from "../lib/claims/api-keys.ts";
import { isShownPaused, pausedView } from "../lib/claims/paused-view.ts";
import { matchesMetadata, type SandboxView } from "../lib/claims/sandbox-view.ts";
import { parseWith } from "../lib/crd/parse-with.ts";
import {
  type E2bListed,
  type E2bSettings,
  e2bListed,
  isE2bVisible,
  templateIdOf,
} from "../lib/e2b/answers.ts";
import { collectPages, type Page, pausedOffset, pausedPage } from "../lib/e2b/list-pages.ts";
import { issueText, keepListed, type ListFilter } from "../lib/e2b/requests.ts";
import { ListSandboxesV2Query, metadataQuery } from "../lib/e2b/schemas.ts";
import type { E2bEnv } from "./e2b.ts";
import { fail } from "./e2b-fail.ts";
import { type PoolReads, pausedPodOf } from "./e2b-pause.ts";

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
 * e2bListRoutes are E2B's sandbox lists: `GET /v2/sandboxes` (a page per call, X-Next-Token) and
 * the deprecated unpaginated `GET /sandboxes`. The v2 list shows the tenant's paused sandboxes
 * (state "paused") and its starting and running ones (state "running"), both unless `state`
 * says otherwise: the paused ones first (their own tokens, pausedPage), then the running ones
 * from apiserver pages (the apiserver's continue token). The v1 list shows running ones only, as
 * E2B's does. Filters on metadata and template are applied to each apiserver page; a call reads
 * up to ten pages to fill its own, so a page is short only when matches are sparse. A nextToken
 * the apiserver refuses (garbled, expired) is a 400 naming it.
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

  /** pausedListed are the tenant's paused sandboxes the filters keep, by sandbox id. */
  const pausedListed = async (tenant: Tenant, metadata: Record<string, string>, filter: ListFilter) => {
    const pools: PoolReads = new Map();
    const listed: E2bListed[] = [];
    for (const snapshot of await listPaused(deps, tenant)) {
      if (!isShownPaused(snapshot)) continue;
      const view = pausedView(snapshot, deps.now());
      if (!matchesMetadata(view, metadata)) continue;
      const pod = await pausedPodOf(deps, snapshot, pools);
      if (keepListed(view, templateIdOf(pod, view), filter, true))
        listed.push(e2bListed(pod, view, settings));
    }
    return listed.sort((a, b) => a.sandboxID.localeCompare(b.sandboxID));
  };

  app.get("/v2/sandboxes", async (c) => {
    const q = parseWith(ListSandboxesV2Query, c.req.query());
    if (!q.ok) return fail(c, 400, issueText(q.issues));
    const metadata = readMetadata(q.value.metadata);
    if (!metadata) return fail(c, 400, "metadata: must be a URL-encoded query string (k=v&k2=v2)");
    const states = q.value.state ?? ["running", "paused"];
    const offset = pausedOffset(q.value.nextToken);
    if (typeof offset === "object") return fail(c, 400, `nextToken: ${offset.error}`);
    // A call without a token, or with one into the paused ones, starts with them.
    const listed: E2bListed[] = [];
    let next: string | undefined;
    let room = q.value.limit;
    const podToken = offset === undefined ? q.value.nextToken : undefined;
    if (states.includes("paused") && (offset !== undefined || !q.value.nextToken)) {
      const paused = pausedPage(
        await pausedListed(c.get("tenant"), metadata, q.value),
        offset ?? 0,
        room,
        states.includes("running"),
      );
      listed.push(...paused.items);
      next = paused.next;
      room = paused.room;
    }
    if (states.includes("running") && room > 0) {
      // Filters the apiserver cannot apply thin pages out, so read on (a few pages at most) until
      // the page is full: an SDK that reads one page must not get [] while matches exist.
      const read = pageReader(c.get("tenant"), metadata, (view, pod) =>
        keepListed(view, templateIdOf(pod, view), q.value, isE2bVisible(view)),
      );
      let page: Page<E2bListed>;
      try {
        page = await collectPages(read, podToken, { maxItems: room, maxPages: V2_LIST_PAGES });
      } catch (e) {
        if (e instanceof ContinueRejected) return fail(c, 400, `nextToken: ${e.message}`);
        throw e;
      }
      listed.push(...page.items);
      next = page.next;
    }
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
