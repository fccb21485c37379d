import type { V1Pod } from "@kubernetes/client-node";
import { type Context, Hono } from "hono";
import { ownerToken } from "../functions/api/sandbox-access.ts";
import { setSandboxTimeouts } from "../functions/api/set-timeout.ts";
import { ownerTrafficToken } from "../functions/api/traffic-access.ts";
import type { HostDeps } from "../functions/host-deps.ts";
import { findPaused } from "../functions/snapshots/find-paused.ts";
import { pauseSandbox } from "../functions/snapshots/pause-sandbox.ts";
import { type ResumeOutcome, resumeSandbox } from "../functions/snapshots/resume-sandbox.ts";
import type { Tenant } from "../lib/claims/api-keys.ts";
import { isShownPaused, pausedView } from "../lib/claims/paused-view.ts";
import type { SandboxView } from "../lib/claims/sandbox-view.ts";
import type { SandboxPool } from "../lib/crd/sandbox-pool.ts";
import type { SandboxSnapshot } from "../lib/crd/sandbox-snapshot.ts";
import { type E2bSettings, e2bDetail, e2bSandbox, isE2bVisible } from "../lib/e2b/answers.ts";
import { pausedPod } from "../lib/e2b/paused.ts";
import { E2B_OPERATION_WAIT_SECONDS } from "../lib/e2b/requests.ts";
import {
  CONNECT_V2_SECONDS,
  type ConnectRequest,
  ConnectSandbox,
  ConnectSandboxV2,
  PauseSandbox,
  ResumeSandbox,
} from "../lib/e2b/schemas.ts";
import { isNotFound } from "../lib/kube/errors.ts";
import type { E2bEnv } from "./e2b.ts";
import { parseBody } from "./e2b-body.ts";
import { fail } from "./e2b-fail.ts";

type C = Context<E2bEnv>;

/**
 * e2bTokens are the two tokens an E2B answer carries, for the sandbox's owner only (none for an
 * admin looking at another tenant's): envd's, derived for the pod's incarnation (a resumed
 * sandbox's envd has a new token), and a private sandbox's traffic token (ownerTrafficToken).
 */
export async function e2bTokens(deps: HostDeps, tenant: Tenant, pod: V1Pod, view: SandboxView) {
  return Promise.all([ownerToken(deps, tenant, pod, view), ownerTrafficToken(deps, tenant, pod, view)]);
}

/** PoolReads shares one read per pool among the paused sandboxes of one answer. */
export type PoolReads = Map<string, Promise<SandboxPool | undefined>>;

/**
 * pausedPodOf is the pod E2B's answers read for a paused sandbox (pausedPod): its pool's
 * template, read from the watch cache once per pool of an answer (`pools`); a pool that is gone
 * gives E2B's default resources.
 */
export function pausedPodOf(
  deps: HostDeps,
  snapshot: SandboxSnapshot,
  pools: PoolReads = new Map(),
): Promise<V1Pod> {
  const namespace = snapshot.metadata?.namespace ?? "";
  const key = `${namespace}/${snapshot.spec.pool}`;
  let pool = pools.get(key);
  if (!pool) {
    pool = deps.kube
      .getPool(namespace, snapshot.spec.pool, { cached: true })
      .catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
    pools.set(key, pool);
  }
  return pool.then((p) => pausedPod(snapshot, p));
}

/**
 * e2bPausedDetail is E2B's SandboxDetail of the tenant's paused sandbox id (state "paused"), or
 * undefined when it has none. No envd token: a paused sandbox runs no envd, and its resume
 * answers the one it will run with.
 */
export async function e2bPausedDetail(deps: HostDeps, c: C, id: string, settings: E2bSettings) {
  const snapshot = await findPaused(deps, c.get("tenant"), id);
  if (!snapshot || !isShownPaused(snapshot)) return undefined;
  return e2bDetail(await pausedPodOf(deps, snapshot), pausedView(snapshot, deps.now()), settings, undefined);
}

/**
 * e2bPauseRoutes are E2B's pause, resume and connect. A pause commits the sandbox's files and
 * gives its pod back to the pool (memory and processes are not kept: `memory: true` is a 400);
 * 204, 409 when it is already paused or not running yet, 500 with the reason when the commit
 * failed (the sandbox runs on), 504 when it did not finish in time. A resume claims an idle pod
 * of its pool to the snapshot (201, E2B's Sandbox), 409 when it runs; a connect retimes a running
 * sandbox (200, as before) and resumes a paused one (201). Every wait stays under the SDK's 60 s
 * request timeout (E2B_OPERATION_WAIT_SECONDS).
 */
export function e2bPauseRoutes(deps: HostDeps, settings: E2bSettings): Hono<E2bEnv> {
  const app = new Hono<E2bEnv>();
  const notFound = (c: C, id: string) => fail(c, 404, `sandbox "${id}" not found`);
  /** answer is E2B's Sandbox, with the tokens for the sandbox's owner only. */
  const answer = async (c: C, pod: V1Pod, view: SandboxView, status: 200 | 201) =>
    c.json(e2bSandbox(pod, view, settings, ...(await e2bTokens(deps, c.get("tenant"), pod, view))), status);
  /** refused answers a resume that did not happen, in E2B's shape. */
  const refused = (c: C, id: string, outcome: Extract<ResumeOutcome, { ok: false }>) => {
    switch (outcome.reason) {
      case "not-found":
        return notFound(c, id);
      case "exhausted":
        c.header("Retry-After", "1");
        return fail(c, 503, outcome.message);
      case "failed":
        return fail(c, 500, outcome.message);
      case "limited":
        return fail(c, 429, outcome.message);
      default:
        // running, pausing, a resume racing this one, its pool gone: the sandbox's state says no.
        return fail(c, 409, outcome.message);
    }
  };
  const resume = (c: C, id: string, timeout: number | undefined) =>
    resumeSandbox(deps, c.get("tenant"), id, {
      ...(timeout ? { timeoutSeconds: timeout } : {}),
      waitSeconds: E2B_OPERATION_WAIT_SECONDS,
    });

  app.post("/sandboxes/:id/pause", async (c) => {
    const req = await parseBody<unknown>(c, PauseSandbox);
    if (req instanceof Response) return req;
    const id = c.req.param("id");
    const outcome = await pauseSandbox(deps, c.get("tenant"), id, {
      waitMs: E2B_OPERATION_WAIT_SECONDS * 1000,
    });
    if (outcome.ok) return c.body(null, 204);
    switch (outcome.reason) {
      case "not-found":
        return notFound(c, id);
      case "paused":
      case "not-running":
        return fail(c, 409, outcome.message);
      case "timeout":
        return fail(c, 504, outcome.message);
      case "not-configured":
        return fail(c, 501, outcome.message);
      default:
        return fail(c, 500, outcome.message);
    }
  });

  app.post("/sandboxes/:id/resume", async (c) => {
    const req = await parseBody<{ timeout?: number }>(c, ResumeSandbox);
    if (req instanceof Response) return req;
    const id = c.req.param("id");
    const outcome = await resume(c, id, req.timeout);
    if (!outcome.ok) return refused(c, id, outcome);
    if (!outcome.resumed) return fail(c, 409, `sandbox "${id}" is already running`);
    return answer(c, outcome.pod, outcome.sandbox, 201);
  });

  /** retime extends a running (or starting) sandbox's lifetime; undefined when it has none. */
  const retime = (c: C, id: string, seconds: number) =>
    setSandboxTimeouts(deps, c.get("tenant"), id, { lifetime: { seconds, mode: "extend" } }, isE2bVisible);
  const connect = (schema: typeof ConnectSandbox | typeof ConnectSandboxV2) => async (c: C) => {
    const req = await parseBody<ConnectRequest>(c, schema);
    if (req instanceof Response) return req;
    const id = c.req.param("id") ?? "";
    const seconds = req.timeout ?? CONNECT_V2_SECONDS;
    const running = await retime(c, id, seconds);
    if (running) return answer(c, running.pod, running.view, 200);
    const outcome = await resume(c, id, req.timeout);
    if (outcome.ok) return answer(c, outcome.pod, outcome.sandbox, outcome.resumed ? 201 : 200);
    if (outcome.reason === "running") {
      // Another resume brought it back between the two reads: connected as to a running one.
      const now = await retime(c, id, seconds);
      if (now) return answer(c, now.pod, now.view, 200);
    }
    return refused(c, id, outcome);
  };
  app.post("/sandboxes/:id/connect", connect(ConnectSandbox));
  app.post("/v2/sandboxes/:id/connect", connect(ConnectSandboxV2));
  return app;
}
