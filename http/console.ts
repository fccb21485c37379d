import type { V1Secret } from "@kubernetes/client-node";
import { type Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { html } from "hono/html";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { deleteSandbox } from "../functions/api/delete-sandbox.ts";
import { listTargets } from "../functions/api/list-targets.ts";
import { ConsoleSessions, SESSION_READ_GAP_MS } from "../functions/console/console-sessions.ts";
import { loadConsole } from "../functions/console/load-console.ts";
import type { HostDeps } from "../functions/host-deps.ts";
import { resumeSandbox } from "../functions/snapshots/resume-sandbox.ts";
import type { Tenant } from "../lib/claims/api-keys.ts";
import { historyScope } from "../lib/claims/history-scope.ts";
import { RESUME_WAIT_SECONDS } from "../lib/claims/paused-view.ts";
import { HistoryQuery } from "../lib/claims/schemas.ts";
import { type Html, page } from "../lib/console/layout.ts";
import {
  envsView,
  historyView,
  loginView,
  poolsView,
  sandboxesView,
  templatesView,
} from "../lib/console/pages.ts";
import { poolCharts } from "../lib/console/pool-chart.ts";
import type { PoolSamples } from "../lib/console/pool-samples.ts";
import { sandboxNotResumedView } from "../lib/console/sandbox-page.ts";
import { SESSION_TTL_MS } from "../lib/console/sessions.ts";
import { parseWith } from "../lib/crd/parse-with.ts";
import { HistoryUnavailable, type HistoryQuery as StoreQuery } from "../lib/history/store.ts";
import { PacedRead } from "../lib/util/paced-read.ts";
import { consoleEnvRoutes } from "./console-envs.ts";
import { consoleSandboxRoutes } from "./console-sandbox.ts";
import { resumeRefusal } from "./sandbox-pause.ts";

/** CONSOLE_COOKIE holds the session ID (never a credential): HttpOnly, Secure, SameSite=Strict, under /ui. */
export const CONSOLE_COOKIE = "agentbox_console";

/** CONSOLE_BODY_LIMIT: a console form's body (sign-in, release, resume, an Env's edits) is at most 64 KiB. */
export const CONSOLE_BODY_LIMIT = 64 * 1024;

/** ConsoleDeps are the API's deps (the console reads as the API does) and the admin token. */
export interface ConsoleDeps {
  api: HostDeps;
  adminToken: string;
  /** poolSamples are the host's samples of its pools' gauges (the Node host's); none: no charts. */
  poolSamples?: Pick<PoolSamples, "window">;
  /**
   * sessionReads paces the host's reads of the sessions Secret (one per host or isolate, shared by
   * its requests); unset, each consoleRoutes paces its own.
   */
  sessionReads?: PacedRead<V1Secret | undefined>;
}

type Env = { Variables: { tenant: Tenant } };

/** HISTORY_DOWN stands for the history while its database is unavailable. */
const HISTORY_DOWN = html`<section id="history"><h2>History</h2>
  <p class="warn">The history cannot be read right now (its database is unavailable); try again in a moment.</p></section>`;

/**
 * consoleRoutes is the web console under /ui, server-rendered HTML. Sign-in takes a credential
 * (an API key: its tenant's view; the admin token: everything), checks it as the API does and
 * opens a server-side session (ConsoleSessions): the HttpOnly, Secure, SameSite=Strict cookie
 * holds only the session's random ID. Every request checks the session and what it stands for, so
 * a revoked key or a changed admin token signs out on the next page; sign-out ends the session,
 * sessions end after 12 hours. Forms must come from this origin, and their bodies are limited
 * (CONSOLE_BODY_LIMIT) before anything parses them.
 */
export function consoleRoutes(deps: ConsoleDeps): Hono<Env> {
  const app = new Hono<Env>();
  const sessions = new ConsoleSessions({
    api: deps.api,
    adminToken: deps.adminToken,
    reads: deps.sessionReads ?? new PacedRead(SESSION_READ_GAP_MS, () => Date.now()),
  });
  const show = (c: Context<Env>, title: string, body: Html, status: ContentfulStatusCode = 200) => {
    const t = c.get("tenant");
    const who = t ? (t.admin ? "admin (every tenant)" : `${t.team} / ${t.user}`) : undefined;
    return c.html(page(title, who, body), status);
  };
  app.use("*", async (c, next) => {
    c.header("cache-control", "no-store");
    c.header("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'");
    c.header("x-frame-options", "DENY");
    if (c.req.method === "POST") {
      // SameSite=Strict keeps other sites' forms from carrying the cookie; Origin says so again.
      const origin = c.req.header("origin");
      if (!origin || origin !== new URL(c.req.url).origin) return c.text("cross-origin form refused", 403);
    }
    return next();
  });
  // Before anything reads a body (the sign-in's parse included): as /v1 limits its bodies.
  app.use(
    "*",
    bodyLimit({
      maxSize: CONSOLE_BODY_LIMIT,
      onError: (c) => c.text(`console form bodies are limited to ${CONSOLE_BODY_LIMIT / 1024} KiB`, 413),
    }),
  );
  app.use("*", async (c, next) => {
    // The sign-in page itself (mounted at /ui or at the root), not any path that ends in /login.
    if (/^(\/[^/]+)?\/login$/.test(c.req.path)) return next();
    const tenant = await sessions.tenantOf(getCookie(c, CONSOLE_COOKIE));
    if (!tenant) return c.redirect("/ui/login", 303);
    c.set("tenant", tenant);
    return next();
  });
  app.get("/login", (c) => show(c, "Sign in", loginView()));
  app.post("/login", async (c) => {
    const form = await c.req.parseBody();
    const credential = typeof form.credential === "string" ? form.credential.trim() : "";
    const session = await sessions.start(credential);
    if (!session)
      return show(c, "Sign in", loginView("That is neither a valid API key nor the admin token."), 401);
    if (session === "full")
      return show(c, "Sign in", loginView("Too many console sessions are open; try again later."), 503);
    setCookie(c, CONSOLE_COOKIE, session, {
      httpOnly: true,
      secure: true,
      sameSite: "Strict",
      path: "/ui",
      maxAge: SESSION_TTL_MS / 1000,
    });
    return c.redirect("/ui", 303);
  });
  app.post("/logout", async (c) => {
    await sessions.end(getCookie(c, CONSOLE_COOKIE));
    deleteCookie(c, CONSOLE_COOKIE, { path: "/ui", secure: true });
    return c.redirect("/ui/login", 303);
  });
  app.get("/", async (c) => {
    const d = await loadConsole(deps.api, c.get("tenant"), { limit: 20 });
    const now = deps.api.now();
    return show(
      c,
      "Overview",
      html`${envsView(d.envs)}${poolsView(d.pools, poolCharts(deps.poolSamples, now))}${sandboxesView(d.sandboxes, d.warnings, now)}${d.history ? historyView(d.history, {}) : HISTORY_DOWN}`,
    );
  });
  app.get("/history", async (c) => {
    const q = parseWith(HistoryQuery, dropEmpty(c.req.query()));
    if (!q.ok)
      return show(
        c,
        "History",
        html`<section><p class="warn">${q.issues.map((i) => `${i.path}: ${i.message}`).join("; ")}</p></section>`,
      );
    const query = q.value as StoreQuery;
    // The history page reads the history alone, in the tenant's scope as the API does.
    const page = await deps.api.history
      .query({ ...query, ...historyScope(c.get("tenant")) })
      .catch((e: unknown) => {
        if (e instanceof RangeError) return undefined; // a cursor from another query
        if (e instanceof HistoryUnavailable) return "down" as const;
        throw e;
      });
    if (page === "down") {
      c.header("Retry-After", String(HistoryUnavailable.RETRY_AFTER_SECONDS));
      return show(c, "History", HISTORY_DOWN, 503);
    }
    if (!page)
      return show(
        c,
        "History",
        html`<section><p class="warn">That page cursor is not valid here.</p></section>`,
      );
    return show(c, "History", historyView(page, query));
  });
  app.get("/templates", async (c) => {
    const { templates } = await listTargets(deps.api, c.get("tenant"));
    return show(c, "Templates", templatesView(templates));
  });
  // Release (a running sandbox) and Kill (a paused one: its snapshot is deleted) are one form and
  // one function, as DELETE /v1/sandboxes/{id} is.
  app.post("/sandboxes/:id/release", async (c) => {
    await deleteSandbox(deps.api, c.get("tenant"), c.req.param("id"));
    return c.redirect("/ui#sandboxes", 303);
  });
  // Resume a paused sandbox and wait for it to run, as the native resume does by default.
  app.post("/sandboxes/:id/resume", async (c) => {
    const id = c.req.param("id");
    const outcome = await resumeSandbox(deps.api, c.get("tenant"), id, { waitSeconds: RESUME_WAIT_SECONDS });
    if (outcome.ok) return c.redirect("/ui#sandboxes", 303);
    const refusal = resumeRefusal(id, outcome);
    if (refusal.retryAfter) c.header("Retry-After", refusal.retryAfter);
    const status = refusal.error.status as ContentfulStatusCode;
    return show(c, "Not resumed", sandboxNotResumedView(id, refusal.error.body.error.message), status);
  });
  // The Env page and its edits (issue #26, section 3).
  consoleEnvRoutes(app, deps.api, show);
  // The sandbox page: its details and its CPU and memory over its life (issue #38).
  consoleSandboxRoutes(app, deps.api, show);
  return app;
}

/** dropEmpty leaves out a form's empty fields (an empty filter means no filter). */
function dropEmpty(q: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(q).filter(([, v]) => v !== ""));
}
