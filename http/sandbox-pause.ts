import { Hono } from "hono";
import { viewWithAccess } from "../functions/api/sandbox-access.ts";
import type { HostDeps } from "../functions/host-deps.ts";
import { findPaused, listPaused } from "../functions/snapshots/find-paused.ts";
import { pauseSandbox } from "../functions/snapshots/pause-sandbox.ts";
import { resumeSandbox } from "../functions/snapshots/resume-sandbox.ts";
import type { Tenant } from "../lib/claims/api-keys.ts";
import {
  type ApiError,
  badRequest,
  conflict,
  notConfigured,
  notFound,
  unavailable,
} from "../lib/claims/errors.ts";
import { isShownPaused, PauseRequest, pausedView, ResumeRequest } from "../lib/claims/paused-view.ts";
import { matchesMetadata, type SandboxView } from "../lib/claims/sandbox-view.ts";
import { parseWith } from "../lib/crd/parse-with.ts";
import { type NativeEnv, send } from "./native.ts";

/** failedWith is a pause or resume that failed on the way (a 500 naming why: the sandbox is as it was). */
const failedWith = (code: string, message: string) => ({
  status: 500,
  body: { error: { code, message } },
});

/** timedOut (504): the pause did not finish in time; it may still finish (GET the sandbox). */
const timedOut = (message: string) => ({ status: 504, body: { error: { code: "PauseTimeout", message } } });

/** pausedSandbox is the native view of the tenant's paused sandbox id, or undefined when it has none. */
export async function pausedSandbox(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
): Promise<SandboxView | undefined> {
  const snapshot = await findPaused(deps, tenant, id);
  return snapshot && isShownPaused(snapshot) ? pausedView(snapshot, deps.now()) : undefined;
}

/**
 * listPausedViews is the native list's `phase=paused` (GET /v1/sandboxes): the tenant's paused
 * sandboxes from their snapshots (one list, every namespace), filtered by pool (`namespace/name`)
 * and metadata, at most `limit`, oldest pause first.
 */
export async function listPausedViews(
  deps: HostDeps,
  tenant: Tenant,
  q: { limit: number; pool?: string; metadata?: Record<string, string> },
): Promise<SandboxView[]> {
  const views = (await listPaused(deps, tenant))
    .filter(isShownPaused)
    .map((s) => pausedView(s, deps.now()))
    .filter((v) => !q.pool || `${v.namespace}/${v.pool}` === q.pool)
    .filter((v) => !q.metadata || matchesMetadata(v, q.metadata));
  views.sort(
    (a, b) => (a.pausedAt ?? "").localeCompare(b.pausedAt ?? "") || a.sandboxId.localeCompare(b.sandboxId),
  );
  return views.slice(0, q.limit);
}

/** optionalJson reads a body that may be empty (undefined) or JSON; ok false when it is neither. */
async function optionalJson(req: Request): Promise<{ ok: true; value: unknown } | { ok: false }> {
  const text = await req.text();
  try {
    return { ok: true, value: text.trim() === "" ? undefined : JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/**
 * sandboxPauseRoutes serve the native `POST /v1/sandboxes/{id}/pause` and `.../resume`. A pause
 * commits the sandbox's files and gives its pod back to the pool: 200 with the paused view
 * (phase "paused"), 409 when it is paused already or not running yet, 500 naming why a commit
 * failed (the sandbox runs on, nothing lost), 504 when it did not finish within the body's
 * `waitTimeout` (the pause abandoned, the sandbox runs on). A resume
 * (body optional: `timeout`, the lifetime from now; `waitTimeout`) claims an idle pod of its
 * pool to the snapshot and waits for it to run: 200 with the sandbox as its GET shows it, 409
 * when it runs or is being paused, 503 when its pool has no idle pod (retry), 500 when it did
 * not come up. Another tenant's sandbox is a 404, as everywhere.
 */
export function sandboxPauseRoutes(deps: HostDeps, domain: string | undefined): Hono<NativeEnv> {
  const app = new Hono<NativeEnv>();
  const unknown = (id: string) => notFound(`no sandbox "${id}"`);

  app.post("/sandboxes/:id/pause", async (c) => {
    const id = c.req.param("id");
    const body = await optionalJson(c.req.raw);
    if (!body.ok) return send(c, badRequest("the body is not valid JSON"));
    const req = parseWith(PauseRequest, body.value);
    if (!req.ok) return send(c, badRequest("invalid pause request", req.issues));
    const outcome = await pauseSandbox(deps, c.get("tenant"), id, {
      ...(req.value.waitTimeout ? { waitMs: req.value.waitTimeout * 1000 } : {}),
    });
    if (outcome.ok) return c.json(pausedView(outcome.snapshot, deps.now()));
    const errors: Record<typeof outcome.reason, ApiError | ReturnType<typeof failedWith>> = {
      "not-found": unknown(id),
      paused: conflict(outcome.message),
      "not-running": conflict(outcome.message),
      failed: failedWith("PauseFailed", outcome.message),
      timeout: timedOut(outcome.message),
      "not-configured": notConfigured(outcome.message),
    };
    return send(c, errors[outcome.reason]);
  });

  app.post("/sandboxes/:id/resume", async (c) => {
    const id = c.req.param("id");
    const body = await optionalJson(c.req.raw);
    if (!body.ok) return send(c, badRequest("the body is not valid JSON"));
    const req = parseWith(ResumeRequest, body.value);
    if (!req.ok) return send(c, badRequest("invalid resume request", req.issues));
    const outcome = await resumeSandbox(deps, c.get("tenant"), id, {
      ...(req.value.timeout ? { timeoutSeconds: req.value.timeout } : {}),
      waitSeconds: req.value.waitTimeout,
    });
    if (outcome.ok)
      return c.json(await viewWithAccess(deps, c.get("tenant"), outcome.pod, outcome.sandbox, domain));
    if (outcome.reason === "exhausted") c.header("Retry-After", "1");
    const errors: Record<typeof outcome.reason, ApiError | ReturnType<typeof failedWith>> = {
      "not-found": unknown(id),
      running: conflict(outcome.message),
      pausing: conflict(outcome.message),
      conflict: conflict(outcome.message),
      "pool-gone": conflict(outcome.message),
      exhausted: unavailable(outcome.message),
      limited: { status: 429, body: { error: { code: "TooManySandboxes", message: outcome.message } } },
      failed: failedWith("ResumeFailed", outcome.message),
    };
    return send(c, errors[outcome.reason]);
  });
  return app;
}
