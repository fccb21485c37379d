import { Hono } from "hono";
import { viewWithAccess } from "../functions/api/sandbox-access.ts";
import type { HostDeps } from "../functions/host-deps.ts";
import { pauseSandbox } from "../functions/snapshots/pause-sandbox.ts";
import { type ResumeOutcome, resumeSandbox } from "../functions/snapshots/resume-sandbox.ts";
import {
  type ApiError,
  badRequest,
  conflict,
  notConfigured,
  notFound,
  unavailable,
} from "../lib/claims/errors.ts";
import { PauseRequest, pausedView, ResumeRequest } from "../lib/claims/paused-view.ts";
import { parseWith } from "../lib/crd/parse-with.ts";
import { type NativeEnv, send } from "./native.ts";

/** failedWith is a pause or resume that failed on the way (a 500 naming why: the sandbox is as it was). */
const failedWith = (code: string, message: string) => ({
  status: 500,
  body: { error: { code, message } },
});

/** timedOut (504): the pause did not finish in time; it may still finish (GET the sandbox). */
const timedOut = (message: string) => ({ status: 504, body: { error: { code: "PauseTimeout", message } } });

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
    const refusal = resumeRefusal(id, outcome);
    if (refusal.retryAfter) c.header("Retry-After", refusal.retryAfter);
    return send(c, refusal.error);
  });
  return app;
}

/** ResumeRefusal is the native answer to a resume that did not happen, and its Retry-After if any. */
export interface ResumeRefusal {
  error: ApiError | ReturnType<typeof failedWith>;
  retryAfter?: string;
}

/**
 * resumeRefusal answers a resume that did not happen (the native route's answer; the console
 * shows its status and message): 404 for another tenant's sandbox as for none, 409 when it runs,
 * is being paused or its pool is gone, 503 with Retry-After when no idle pod can serve it now, 429 at the team's limit, 500 when it did not come up.
 */
export function resumeRefusal(id: string, outcome: Extract<ResumeOutcome, { ok: false }>): ResumeRefusal {
  const errors: Record<typeof outcome.reason, ApiError | ReturnType<typeof failedWith>> = {
    "not-found": notFound(`no sandbox "${id}"`),
    running: conflict(outcome.message),
    pausing: conflict(outcome.message),
    conflict: conflict(outcome.message),
    "pool-gone": conflict(outcome.message),
    exhausted: unavailable(outcome.message),
    limited: { status: 429, body: { error: { code: "TooManySandboxes", message: outcome.message } } },
    failed: failedWith("ResumeFailed", outcome.message),
  };
  const retryAfter = outcome.reason === "exhausted" ? "1" : undefined;
  return { error: errors[outcome.reason], ...(retryAfter ? { retryAfter } : {}) };
}
