import type { V1Secret } from "@kubernetes/client-node";
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { HostDeps } from "../functions/host-deps.ts";
import { admissionCatalog } from "../functions/instance-types.ts";
import { consoleRoutes } from "../http/console.ts";
import { e2bRoutes } from "../http/e2b.ts";
import { type EnvRunner, functionsRoutes, type MemberRunner, type StepRunner } from "../http/functions.ts";
import { httpMetrics, metricsRoutes, type Scrape } from "../http/metrics.ts";
import { sandboxRoutes } from "../http/sandboxes.ts";
import type { PoolSamples } from "../lib/console/pool-samples.ts";
import type { SandboxTemplate } from "../lib/crd/sandbox-template.ts";
import type { E2bSettings } from "../lib/e2b/answers.ts";
import { isApiServerTrouble } from "../lib/kube/errors.ts";
import type { Metrics } from "../lib/metrics/metrics.ts";
import type { Log } from "../lib/util/log.ts";
import type { PacedRead } from "../lib/util/paced-read.ts";
import { admissionRoutes } from "../webhooks/admission.ts";
import { type AuditEventList, auditRoutes } from "../webhooks/audit.ts";

export interface AppDeps {
  callbackToken: string;
  logger: Log;
  /** onAuditEvents receives every accepted audit batch. */
  onAuditEvents?: (list: AuditEventList) => void;
  /** adminToken and functions enable the manual triggers under /functions. */
  adminToken?: string;
  functions?: { steps: readonly string[]; run: StepRunner; runEnv?: EnvRunner; refreshMember?: MemberRunner };
  /** readTemplate lets the defaulting webhook copy a pool's template at creation. */
  readTemplate?: (name: string) => Promise<SandboxTemplate | undefined>;
  /** api enables the sandbox REST API under /v1, and E2B's API under /e2b. */
  api?: HostDeps;
  /** e2b is what the E2B API reports of every sandbox (envd version; its domain is sandboxDomain). */
  e2b?: E2bSettings;
  /**
   * sandboxDomain is where sandbox ports are reached, `<port>-<id>.<domain>` (checkSandboxDomain's):
   * the E2B answers' `domain` and the native GET's and create's URLs. Unset, E2B answers say
   * UNSET_SANDBOX_DOMAIN (`sandbox-domain-unset.invalid`, never null: ADR 0026).
   */
  sandboxDomain?: string;
  /** metrics count every HTTP request by route template, and audit events. */
  metrics?: Metrics;
  /** poolSamples feed the console's pool charts (the Node host keeps them; a Worker has none). */
  poolSamples?: Pick<PoolSamples, "window">;
  /** consoleSessionReads paces the console's reads of its sessions Secret, per host or isolate. */
  consoleSessionReads?: PacedRead<V1Secret | undefined>;
  /** scrape serves /metrics under its token; without it /metrics is not served. */
  scrape?: Scrape;
  /** ready says whether /readyz answers 200 (false from the moment the host begins to shut down). */
  ready?: () => boolean;
}

/**
 * DEFAULT_E2B_SETTINGS: the envd version answered. The e2b SDK (2.51.0) gates on it: it refuses
 * < 0.1.0; sends user "user" by default below 0.4.0 (none from 0.4.0: envd's default user); needs
 * 0.5.2 for closeStdin and 0.5.7 for octet-stream uploads (files.write of streams, gzip); 0.6.2
 * for file metadata, 0.6.3 and 0.6.4 for watchDir's includeEntry and allowNetworkMounts, which it
 * refuses below them before any request. 0.5.7 is what our envd must implement, no more.
 */
export const DEFAULT_E2B_SETTINGS: E2bSettings = { envdVersion: "0.5.7" };

/** createApp composes every HTTP surface of the host; both hosts serve this same app. */
export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  if (deps.metrics) app.use("*", httpMetrics(deps.metrics));
  app.get("/healthz", (c) => c.text("ok"));
  // Unauthenticated like /healthz, and as bare: it tells a load balancer whether to send work here.
  app.get("/readyz", (c) => (deps.ready?.() === false ? c.text("stopping", 503) : c.text("ok")));
  if (deps.scrape) app.route("/metrics", metricsRoutes(deps.scrape));
  // The validating webhook checks the instance types an Env names against the API's catalog.
  app.route(
    "/admission",
    admissionRoutes({ ...deps, ...(deps.api ? { instanceTypes: admissionCatalog(deps.api) } : {}) }),
  );
  app.route("/audit", auditRoutes({ ...deps, onEvents: deps.onAuditEvents }));
  const domain = deps.sandboxDomain ? { domain: deps.sandboxDomain } : {};
  if (deps.api) app.route("/v1", sandboxRoutes(deps.api, domain));
  if (deps.api) app.route("/e2b", e2bRoutes(deps.api, { ...(deps.e2b ?? DEFAULT_E2B_SETTINGS), ...domain }));
  if (deps.api && deps.adminToken)
    app.route(
      "/ui",
      consoleRoutes({
        api: deps.api,
        adminToken: deps.adminToken,
        ...(deps.poolSamples ? { poolSamples: deps.poolSamples } : {}),
        ...(deps.consoleSessionReads ? { sessionReads: deps.consoleSessionReads } : {}),
      }),
    );
  if (deps.functions && deps.adminToken) {
    app.route(
      "/functions",
      functionsRoutes({ adminToken: deps.adminToken, log: deps.logger, ...deps.functions }),
    );
  }
  app.notFound((c) =>
    c.json({ error: { code: "NotFound", message: `no route for ${c.req.method} ${c.req.path}` } }, 404),
  );
  app.onError((err, c) => {
    // Middleware such as bearer auth reject by throwing a response; pass it through.
    if (err instanceof HTTPException) return err.getResponse();
    if (isApiServerTrouble(err)) {
      const message = (err as Error).message;
      deps.logger.error({ err: message }, "API server unreachable or failing");
      c.header("Retry-After", "1");
      return c.json({ error: { code: "Unavailable", message } }, 503);
    }
    deps.logger.error({ err }, "unhandled error");
    return c.json({ error: { code: "Internal", message: "internal error" } }, 500);
  });
  return app;
}
