import type { V1Pod } from "@kubernetes/client-node";
import { type Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { authenticate } from "../functions/api/authenticate.ts";
import { createSandbox } from "../functions/api/create-sandbox.ts";
import { deleteSandbox } from "../functions/api/delete-sandbox.ts";
import { findSandbox } from "../functions/api/find-sandbox.ts";
import { setSandboxTimeouts } from "../functions/api/set-timeout.ts";
import { waitForRunning } from "../functions/api/wait-running.ts";
import type { HostDeps } from "../functions/host-deps.ts";
import { bearerOrApiKey, type Tenant } from "../lib/claims/api-keys.ts";
import { tooManySandboxes } from "../lib/claims/errors.ts";
import { type SandboxView, sandboxView, whyNotRunning } from "../lib/claims/sandbox-view.ts";
import type { TimeoutChange } from "../lib/claims/timeouts.ts";
import {
  type E2bSettings,
  e2bDetail,
  e2bSandbox,
  isE2bVisible,
  TEMPLATE_ID_ANNOTATION,
} from "../lib/e2b/answers.ts";
import { createWaitSeconds, E2B_IDLE_WAIT_SECONDS, nativeCreate } from "../lib/e2b/requests.ts";
import {
  NewSandbox,
  NewSandboxV2,
  SandboxRefreshRequest,
  SandboxTimeoutRequest,
} from "../lib/e2b/schemas.ts";
import { HistoryUnavailable } from "../lib/history/store.ts";
import { isApiServerTrouble } from "../lib/kube/errors.ts";
import { parseBody } from "./e2b-body.ts";
import { fail } from "./e2b-fail.ts";
import { e2bListRoutes } from "./e2b-list.ts";
import { e2bLogsRoutes } from "./e2b-logs.ts";
import { e2bMetricsRoutes } from "./e2b-metrics.ts";
import { e2bNetworkRoutes } from "./e2b-network.ts";
import { e2bPausedDetail, e2bPauseRoutes, e2bTokens } from "./e2b-pause.ts";
import { e2bTemplatesRoutes } from "./e2b-templates.ts";
import { notImplemented as unsupported } from "./e2b-unsupported.ts";

export type E2bEnv = { Variables: { tenant: Tenant } };

type C = Context<E2bEnv>;

/**
 * e2bRoutes serve E2B's public control-plane API over the same warm pools (mounted at /e2b, so
 * E2B_API_URL=https://host/e2b points the official SDK here): X-API-Key (or Bearer) auth with the
 * same keys as /v1, E2B's bodies, statuses and `{code, message}` errors. A templateID names a
 * SandboxTemplate (or a pool as namespace/name). Creates wait until the sandbox runs and envd has
 * its env and token, as E2B's do; a pause keeps the files and gives the pod back (e2b-pause.ts);
 * the features a pool cannot give (memory snapshots, forks) answer 501.
 * An admin key gets, retimes, connects to and kills any tenant's sandbox, but envdAccessToken is
 * in the answers to the sandbox's owner only (e2bTokens); `domain` is never null (e2bDomain).
 */
export function e2bRoutes(deps: HostDeps, settings: E2bSettings): Hono<E2bEnv> {
  const app = new Hono<E2bEnv>();
  app.use(
    "*",
    bodyLimit({ maxSize: 256 * 1024, onError: (c) => fail(c, 413, "request bodies are limited to 256 KiB") }),
  );
  app.use("*", async (c, next) => {
    const key = bearerOrApiKey({
      authorization: c.req.header("authorization"),
      "x-api-key": c.req.header("x-api-key"),
    });
    const tenant = await authenticate(deps, key);
    if (!tenant) return fail(c, 401, "Invalid API key: present a valid X-API-Key header");
    if (!deps.postStart)
      return fail(c, 501, "the E2B API needs a sealing key on the control plane (AGENTBOX_SEALING_KEY)");
    c.set("tenant", tenant);
    return next();
  });
  /** tokens are the two tokens an answer carries, for the sandbox's owner only (e2bTokens). */
  const tokens = (c: C, pod: V1Pod, view: SandboxView) => e2bTokens(deps, c.get("tenant"), pod, view);
  /** find finds the tenant's sandbox as E2B sees it (starting or running), with its view. */
  const find = async (
    c: C,
    id: string,
  ): Promise<{ pod: V1Pod; view: NonNullable<ReturnType<typeof sandboxView>> } | undefined> => {
    const pod = await findSandbox(deps, c.get("tenant"), id);
    const view = pod && sandboxView(pod, deps.now());
    return pod && view && isE2bVisible(view) ? { pod, view } : undefined;
  };
  const notFound = (c: C, id: string) => fail(c, 404, `sandbox "${id}" not found`);

  const create = (schema: typeof NewSandboxV2) => async (c: C) => {
    const req = await parseBody<NewSandbox>(c, schema);
    if (req instanceof Response) return req;
    const native = nativeCreate(req);
    if (!native.ok) return fail(c, 400, native.message);
    const started = deps.now().getTime();
    const outcome = await createSandbox(deps, c.get("tenant"), native.value, {
      annotations: { [TEMPLATE_ID_ANNOTATION]: req.templateID },
      ...(req.autoPause ? { onTimeout: "pause" as const } : {}),
      // It waits for Running at most this long (what is left of it, below), completing the start.
      waitSeconds: (pool) => createWaitSeconds(pool),
    });
    if (!outcome.ok) {
      if (outcome.reason === "unknown")
        return fail(
          c,
          404,
          outcome.message ??
            `template "${req.templateID}" not found; yours: ${outcome.choices.join(", ") || "none"}`,
        );
      if (outcome.reason === "invalid") return fail(c, 400, outcome.message);
      if (outcome.reason === "not-configured") return fail(c, 501, outcome.message);
      if (outcome.reason === "limited")
        return fail(c, 429, tooManySandboxes(outcome.team, outcome.held, outcome.limit).body.error.message);
      if (outcome.reason === "egress") {
        // Fail closed: no policy, no sandbox (nothing was claimed).
        if (outcome.retry) c.header("Retry-After", "1");
        return fail(c, outcome.retry ? 503 : 500, outcome.message);
      }
      c.header("Retry-After", "1");
      return fail(
        c,
        503,
        `no idle sandbox for template "${req.templateID}" within ${E2B_IDLE_WAIT_SECONDS} s; retry`,
      );
    }
    const seconds = createWaitSeconds(outcome.pool, (deps.now().getTime() - started) / 1000);
    const waited = await waitForRunning(deps, outcome.pod, outcome.pool, seconds * 1000);
    const view = waited.pod && sandboxView(waited.pod, deps.now());
    if (waited.ok && waited.pod && view)
      return c.json(e2bSandbox(waited.pod, view, settings, ...(await tokens(c, waited.pod, view))), 201);
    // A failed E2B create leaves nothing behind: the caller never got the id to release it.
    await deleteSandbox(deps, c.get("tenant"), outcome.sandbox.sandboxId);
    if (!waited.ok && waited.reason === "stopping") {
      // Released above: its caller gets no id to use, so another host serves the retry afresh.
      c.header("Retry-After", "1");
      return fail(c, 503, "this control plane host is shutting down; retry");
    }
    const detail = whyNotRunning(view);
    // A start the control plane ended for its startup timeout (the record says so) timed out too:
    // whether the waiter's clock or the step's ran out first is a race, not a different answer.
    // A history that cannot answer now (its database down) tells nothing: the pod's view decides.
    const record = waited.ok
      ? undefined
      : await deps.history.get(outcome.sandbox.sandboxId).catch((e: unknown) => {
          if (e instanceof HistoryUnavailable) return undefined;
          throw e;
        });
    if (!waited.ok && (waited.reason === "timeout" || record?.failureReason === "StartupTimeout")) {
      // The pod may be gone by now: its record keeps the diagnosis (e.g. ImagePullBackOff).
      const why = detail || (record?.failureMessage ? `: ${record.failureMessage}` : "");
      return fail(c, 504, `sandbox ${outcome.sandbox.sandboxId} did not start within ${seconds} s${why}`);
    }
    return fail(c, 500, `sandbox ${outcome.sandbox.sandboxId} failed to start${detail}`);
  };
  app.post("/v2/sandboxes", create(NewSandboxV2));
  app.post("/sandboxes", create(NewSandbox));
  app.route("/", e2bListRoutes(deps, settings));
  // Before `/sandboxes/:id`: `GET /sandboxes/metrics` is a route of its own, not a sandbox id.
  app.route("/", e2bMetricsRoutes(deps, settings));
  app.route("/", e2bLogsRoutes(deps, settings));
  app.route("/", e2bNetworkRoutes(deps, settings));
  app.route("/", e2bTemplatesRoutes(deps, settings));

  app.route("/", e2bPauseRoutes(deps, settings));

  app.get("/sandboxes/:id", async (c) => {
    const found = await find(c, c.req.param("id"));
    if (found)
      return c.json(e2bDetail(found.pod, found.view, settings, ...(await tokens(c, found.pod, found.view))));
    // No pod runs it: a paused sandbox shows as paused.
    const paused = await e2bPausedDetail(deps, c, c.req.param("id"), settings);
    return paused ? c.json(paused) : notFound(c, c.req.param("id"));
  });

  app.delete("/sandboxes/:id", async (c) => {
    const outcome = await deleteSandbox(deps, c.get("tenant"), c.req.param("id"));
    return outcome === "released" ? c.body(null, 204) : notFound(c, c.req.param("id"));
  });

  /** retime applies a lifetime change to a visible sandbox; undefined when there is none. */
  const retime = (c: C, change: TimeoutChange) =>
    setSandboxTimeouts(deps, c.get("tenant"), c.req.param("id") ?? "", change, isE2bVisible);
  app.post("/sandboxes/:id/timeout", async (c) => {
    const req = await parseBody<{ timeout: number }>(c, SandboxTimeoutRequest);
    if (req instanceof Response) return req;
    const changed = await retime(c, { lifetime: { seconds: req.timeout, mode: "set" } });
    return changed ? c.body(null, 204) : notFound(c, c.req.param("id"));
  });
  app.post("/sandboxes/:id/refreshes", async (c) => {
    const req = await parseBody<{ duration: number }>(c, SandboxRefreshRequest);
    if (req instanceof Response) return req;
    const changed = await retime(c, { lifetime: { seconds: req.duration, mode: "extend" } });
    return changed ? c.body(null, 204) : notFound(c, c.req.param("id"));
  });

  // What a warm pool of pods cannot do (yet): E2B's shape, 501.
  // Counted by operation (agentbox_e2b_unsupported_total), so operators see what callers miss.
  const notImplemented = (operation: string, what: string) =>
    unsupported(
      deps,
      operation,
      `${what} is not supported by this control plane (a pause keeps a sandbox's files, not its memory: it cannot be copied or checkpointed in place)`,
    );
  app.post("/sandboxes/:id/snapshots", notImplemented("snapshot", "snapshots"));
  app.post("/sandboxes/:id/fork", notImplemented("fork", "forking a sandbox"));
  // E2B's shape for everything under /e2b, errors included (a mounted app's notFound is not used).
  app.all("*", (c) => fail(c, 404, `no route for ${c.req.method} ${c.req.path}`));
  app.onError((err, c) => {
    if (isApiServerTrouble(err)) {
      c.header("Retry-After", "1");
      return fail(c, 503, (err as Error).message);
    }
    deps.log.error({ err: String(err) }, "unhandled error in the E2B API");
    return fail(c, 500, "internal error");
  });
  return app;
}
