import type { V1Pod } from "@kubernetes/client-node";
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { endTime, setMetric, startTime, timing } from "hono/timing";
import { authenticate } from "../functions/api/authenticate.ts";
import { createSandbox } from "../functions/api/create-sandbox.ts";
import { deleteSandbox } from "../functions/api/delete-sandbox.ts";
import { getSandbox } from "../functions/api/get-sandbox.ts";
import { ContinueRejected, listSandboxes } from "../functions/api/list-sandboxes.ts";
import { listTargets } from "../functions/api/list-targets.ts";
import { listPausedViews, pausedSandbox } from "../functions/api/paused-views.ts";
import { recordActivity } from "../functions/api/record-activity.ts";
import { readTarget } from "../functions/api/resolve-pool.ts";
import { viewWithAccess } from "../functions/api/sandbox-access.ts";
import { setSandboxTimeouts } from "../functions/api/set-timeout.ts";
import { waitForRunning } from "../functions/api/wait-running.ts";
import type { HostDeps } from "../functions/host-deps.ts";
import { ActivityRequest } from "../lib/claims/activity.ts";
import { bearerOrApiKey } from "../lib/claims/api-keys.ts";
import {
  badRequest,
  notConfigured,
  notFound,
  notRunning,
  shuttingDown,
  tooManySandboxes,
  unauthorized,
  unavailable,
} from "../lib/claims/errors.ts";
import { openApiDocument } from "../lib/claims/openapi.ts";
import {
  isMetadataFilterError,
  parseMetadataFilter,
  type SandboxView,
  sandboxView,
  whyNotRunning,
} from "../lib/claims/sandbox-view.ts";
import { CreateSandboxRequest, ListSandboxesQuery, TimeoutRequest } from "../lib/claims/schemas.ts";
import { envSummary, poolSummary } from "../lib/claims/target-summaries.ts";
import { timeoutChange } from "../lib/claims/timeouts.ts";
import { waitSeconds } from "../lib/claims/wait-seconds.ts";
import { type ApiIssue, parseWith } from "../lib/crd/parse-with.ts";
import { settled } from "../lib/util/settled.ts";
import { historyRoutes } from "./history.ts";
import { type NativeEnv, send } from "./native.ts";
import { sandboxLogsRoutes } from "./sandbox-logs.ts";
import { sandboxMetricsRoutes } from "./sandbox-metrics.ts";
import { sandboxNetworkRoutes } from "./sandbox-network.ts";
import { sandboxPauseRoutes } from "./sandbox-pause.ts";
import { templatesRoutes } from "./templates.ts";

type Env = NativeEnv;

/** readJson reads a JSON body, or says why it is not one. */
async function readJson(req: Request): Promise<{ ok: true; value: unknown } | { ok: false }> {
  try {
    return { ok: true, value: await req.json() };
  } catch {
    return { ok: false };
  }
}

/** hundredths rounds milliseconds for Server-Timing. */
const hundredths = (ms: number) => Math.round(ms * 100) / 100;

const invalid = (what: string, issues: ApiIssue[]) => badRequest(`invalid ${what}`, issues);

/** SandboxAddressing is how sandboxes are reached, for the answers: the sandbox domain, when set. */
export interface SandboxAddressing {
  domain?: string;
}

/**
 * sandboxRoutes is the native REST API under /v1: every request carries an API key (X-API-Key or
 * Bearer), resolved to a tenant on each call; bodies and queries are validated with field paths;
 * another tenant's sandbox is a 404 like one that does not exist. A sandbox's GET and create also
 * show its network settings and say how it is reached (its URLs under `addressing.domain`; envd's
 * token and a private sandbox's traffic token to its owner only). A sandbox's own surfaces
 * (metrics, logs, network, pause and resume), the templates and the history are modules of their
 * own, mounted here; a paused sandbox's GET shows it with phase "paused".
 */
export function sandboxRoutes(deps: HostDeps, addressing: SandboxAddressing = {}): Hono<Env> {
  const app = new Hono<Env>();
  // Server-Timing on every answer; a create also says how long its key check, target reads and
  // claim took, so a slow create can be taken apart from the client's side.
  app.use("*", timing({ totalDescription: "total" }));
  app.use(
    "*",
    bodyLimit({
      maxSize: 256 * 1024,
      onError: (c) => send(c, badRequest("request bodies are limited to 256 KiB")),
    }),
  );
  const tenantOf = (c: { req: { header: (name: string) => string | undefined } }) =>
    authenticate(
      deps,
      bearerOrApiKey({
        authorization: c.req.header("authorization"),
        "x-api-key": c.req.header("x-api-key"),
      }),
    );
  app.use("*", async (c, next) => {
    // Creates check the key themselves, alongside their first reads (the hot path).
    if (c.req.method === "POST" && c.req.path.endsWith("/v1/sandboxes")) return next();
    const tenant = await tenantOf(c);
    if (!tenant) return send(c, unauthorized());
    c.set("tenant", tenant);
    return next();
  });

  app.get("/openapi.json", (c) => c.json(openApiDocument()));

  app.post("/sandboxes", async (c) => {
    // The key check and the target's watch-cache reads run together; candidate lists and etcd
    // reads wait for a good key (readTarget's `known`). Nothing is answered before the key is
    // known good (an anonymous caller learns nothing, not even whether its body is valid).
    const t0 = performance.now();
    const since = (t: number) => hundredths(performance.now() - t);
    // Stage times are reported only to an authenticated caller: an anonymous one must not learn
    // that its body was valid or how long the target's reads took.
    const took: { key?: number; target?: number } = {};
    // The key check settles into a value at once: it may fail (apiserver down, timed out) while
    // the body is still arriving, and a rejection nobody awaited yet would end the process.
    const tenantP = settled(
      tenantOf(c).finally(() => {
        took.key = since(t0);
      }),
    );
    const body = await readJson(c.req.raw);
    const req = body.ok ? parseWith(CreateSandboxRequest, body.value) : undefined;
    const known = tenantP.then((key) => key.ok && key.value !== undefined);
    const reads = req?.ok ? readTarget(deps, req.value, known) : undefined;
    reads?.then(
      () => {
        took.target = since(t0);
      },
      () => {}, // awaited below, or dropped for a 401
    );
    const key = await tenantP;
    if (!key.ok) throw key.error;
    const tenant = key.value;
    if (!tenant) return send(c, unauthorized());
    if (took.key !== undefined) setMetric(c, "key", took.key);
    if (!body.ok || !req) return send(c, badRequest("the body is not valid JSON"));
    if (!req.ok) return send(c, invalid("sandbox request", req.issues));
    startTime(c, "create");
    const outcome = await createSandbox(deps, tenant, req.value, {}, reads);
    endTime(c, "create");
    if (took.target !== undefined) setMetric(c, "target", took.target);
    // The answer shows its network and says how the sandbox is reached, as its GET does (its
    // creator is its owner: envd's token and, for private ports, the traffic token).
    const claimed = (pod: V1Pod, view: SandboxView) =>
      viewWithAccess(deps, tenant, pod, view, addressing.domain);
    if (outcome.ok && !req.value.wait) return c.json(await claimed(outcome.pod, outcome.sandbox), 201);
    if (outcome.ok) {
      const seconds = waitSeconds(outcome.pool, req.value);
      const waited = await waitForRunning(deps, outcome.pod, outcome.pool, seconds * 1000);
      const { kubeletMs, endMs = 0 } = waited.timeline ?? {};
      // kubelet: until the pod's new containers were seen running; start: the rest of the wait.
      if (kubeletMs !== undefined) setMetric(c, "kubelet", hundredths(kubeletMs));
      setMetric(c, "start", hundredths(endMs - (kubeletMs ?? 0)));
      const view = waited.pod ? sandboxView(waited.pod, deps.now()) : undefined;
      if (waited.ok && view) return c.json(await claimed(waited.pod, view), 201);
      if (!waited.ok && waited.reason === "stopping")
        return send(
          c,
          shuttingDown(
            `this host is shutting down: sandbox ${outcome.sandbox.sandboxId} is yours and still starting without this request (GET it on any host, or DELETE it); do not create again`,
            await (view && waited.pod ? claimed(waited.pod, view) : claimed(outcome.pod, outcome.sandbox)),
          ),
        );
      const why = waited.ok ? "ended" : waited.reason;
      const because = whyNotRunning(view);
      return send(
        c,
        notRunning(
          why === "timeout"
            ? `sandbox ${outcome.sandbox.sandboxId} is not running after ${seconds} s${because}`
            : `sandbox ${outcome.sandbox.sandboxId} stopped starting${because}`,
          view ?? outcome.sandbox,
        ),
      );
    }
    if (outcome.reason === "unknown")
      return send(
        c,
        notFound(outcome.message ?? `no ${outcome.what} "${outcome.name}" for you`, outcome.choices),
      );
    if (outcome.reason === "invalid") return send(c, badRequest(outcome.message));
    if (outcome.reason === "not-configured") return send(c, notConfigured(outcome.message));
    if (outcome.reason === "limited")
      return send(c, tooManySandboxes(outcome.team, outcome.held, outcome.limit));
    if (outcome.reason === "egress") {
      // Fail closed: no policy, no sandbox (nothing was claimed).
      if (outcome.retry) c.header("Retry-After", "1");
      return send(c, unavailable(outcome.message));
    }
    c.header("Retry-After", "1");
    return send(
      c,
      unavailable(
        outcome.stopping
          ? `this host is shutting down and stopped waiting for an idle sandbox in ${outcome.where}; retry (another host serves it)`
          : outcome.contended
            ? `the idle sandboxes in ${outcome.where} were all taken by other creates while this one tried (tried ${outcome.tried}); retry`
            : `no idle sandbox in ${outcome.where} right now (tried ${outcome.tried})`,
      ),
    );
  });

  app.get("/sandboxes", async (c) => {
    const q = parseWith(ListSandboxesQuery, c.req.query());
    if (!q.ok) return send(c, invalid("query", q.issues));
    const metadata = q.value.metadata ? parseMetadataFilter(q.value.metadata) : undefined;
    if (metadata && isMetadataFilterError(metadata))
      return send(c, badRequest("invalid query", [{ path: "metadata", message: String(metadata.error) }]));
    // Paused sandboxes hold no pod: they are listed from their snapshots, when asked for.
    if (q.value.phase === "paused")
      return c.json({
        sandboxes: await listPausedViews(deps, c.get("tenant"), {
          limit: q.value.limit,
          ...(q.value.pool ? { pool: q.value.pool } : {}),
          ...(metadata ? { metadata: metadata as Record<string, string> } : {}),
        }),
      });
    try {
      const page = await listSandboxes(deps, c.get("tenant"), {
        limit: q.value.limit,
        ...(q.value.pool ? { pool: q.value.pool } : {}),
        ...(q.value.phase ? { phase: q.value.phase } : {}),
        ...(metadata ? { metadata: metadata as Record<string, string> } : {}),
        ...(q.value.continue ? { continue: q.value.continue } : {}),
      });
      return c.json({ sandboxes: page.sandboxes, ...(page.continue ? { continue: page.continue } : {}) });
    } catch (e) {
      if (e instanceof ContinueRejected)
        return send(c, badRequest("invalid query", [{ path: "continue", message: e.message }]));
      throw e;
    }
  });

  // What the caller may claim from, with how full each is (the CLI's `get pools|envs`).
  app.get("/pools", async (c) =>
    c.json({ pools: (await listTargets(deps, c.get("tenant"))).pools.map(poolSummary) }),
  );
  app.get("/envs", async (c) =>
    c.json({ envs: (await listTargets(deps, c.get("tenant"))).envs.map(envSummary) }),
  );

  app.route("/", sandboxMetricsRoutes(deps));
  app.route("/", sandboxLogsRoutes(deps));
  app.route("/", sandboxNetworkRoutes(deps));
  app.route("/", sandboxPauseRoutes(deps, addressing.domain));
  app.route("/", templatesRoutes(deps));
  app.route("/", historyRoutes(deps));

  app.get("/sandboxes/:id", async (c) => {
    const id = c.req.param("id");
    // No pod runs it: a paused sandbox shows as paused.
    const view =
      (await getSandbox(deps, c.get("tenant"), id, addressing.domain)) ??
      (await pausedSandbox(deps, c.get("tenant"), id));
    return view ? c.json(view) : send(c, notFound(`no sandbox "${id}"`));
  });

  app.delete("/sandboxes/:id", async (c) => {
    const outcome = await deleteSandbox(deps, c.get("tenant"), c.req.param("id"));
    if (outcome === "not-found") return send(c, notFound(`no sandbox "${c.req.param("id")}"`));
    return c.body(null, 204);
  });

  app.post("/sandboxes/:id/timeout", async (c) => {
    const body = await readJson(c.req.raw);
    if (!body.ok) return send(c, badRequest("the body is not valid JSON"));
    const req = parseWith(TimeoutRequest, body.value);
    if (!req.ok) return send(c, invalid("timeout request", req.issues));
    const changed = await setSandboxTimeouts(
      deps,
      c.get("tenant"),
      c.req.param("id"),
      timeoutChange(req.value),
    );
    return changed ? c.json(changed.view) : send(c, notFound(`no sandbox "${c.req.param("id")}"`));
  });

  app.post("/activity", async (c) => {
    const body = await readJson(c.req.raw);
    if (!body.ok) return send(c, badRequest("the body is not valid JSON"));
    const req = parseWith(ActivityRequest, body.value);
    if (!req.ok) return send(c, invalid("activity report", req.issues));
    return c.json(await recordActivity(deps, c.get("tenant"), req.value));
  });

  return app;
}
