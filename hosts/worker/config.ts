import * as v from "valibot";
import {
  DEFAULT_SNAPSHOT_RETENTION_SECONDS,
  SnapshotRetentionSetting,
} from "../../lib/claims/snapshot-retention.ts";
import { parseTeamLimits } from "../../lib/claims/team-limits.ts";
import { parseWith } from "../../lib/crd/parse-with.ts";
import { checkSandboxDomain } from "../../lib/data-plane/sandbox-domain.ts";
import { ConfigMapRefSetting, DEFAULT_INSTANCE_TYPES } from "../../lib/env/instance-types.ts";
import { IDLE_RELEASE_MODES, idleReleaseMode } from "../../lib/reconcile/idle-release.ts";

const Secret = (min: number) => v.pipe(v.string(), v.minLength(min, `must be at least ${min} characters`));
const Count = (def: string, max: number) =>
  v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d+$/, "must be a whole number"),
      v.transform(Number),
      v.minValue(1),
      v.maxValue(max),
    ),
    def,
  );

/**
 * WorkerEnv lists the Worker's configuration: vars in wrangler.toml, secrets set with `wrangler
 * secret put`, and the D1 binding (checked apart: it is an object).
 */
const WorkerEnvSchema = v.object({
  /** KUBE_API_URL: the apiserver through a tunnel with a publicly trusted certificate. */
  KUBE_API_URL: v.pipe(v.string(), v.url("must be a URL, e.g. https://kube.example.com")),
  KUBE_TOKEN: Secret(8),
  CALLBACK_TOKEN: Secret(16),
  ADMIN_TOKEN: Secret(16),
  /** METRICS_TOKEN opens /metrics only (a scraper's token); unset, the admin token does. */
  METRICS_TOKEN: v.optional(Secret(16)),
  SEALING_KEY: v.optional(Secret(32)),
  ENVD_PORT: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d+$/, "must be a port"),
      v.transform(Number),
      v.minValue(1),
      v.maxValue(65535),
    ),
  ),
  /**
   * TICK_PASSES passes of every pool per cron invocation, TICK_SPACING_SECONDS apart: 5 × 10 s by
   * default, as the README and wrangler.toml say, so a once-a-minute cron still reconciles every
   * pool each 10 s, the Node host's safety net.
   */
  TICK_PASSES: Count("5", 12),
  TICK_SPACING_SECONDS: Count("10", 60),
  TICK_CONCURRENCY: Count("8", 64),
  /** ACTIVITY_SOURCE_URL: the pulled activity source idle-release asks first (optional). */
  ACTIVITY_SOURCE_URL: v.optional(v.pipe(v.string(), v.url("must be a URL"))),
  ACTIVITY_SOURCE_TOKEN: v.optional(v.string()),
  /**
   * CLUSTER_ID is the local cluster's ID: the Env step materialises only the Env segments with
   * this clusterID. Unset, Envs are not reconciled (the pools are).
   */
  CLUSTER_ID: v.optional(v.pipe(v.string(), v.minLength(1, "must not be empty"))),
  /** IDLE_RELEASE is what counts as activity for idle timeouts (default: pulled with a source, else reported). */
  IDLE_RELEASE: v.optional(v.picklist(IDLE_RELEASE_MODES, `must be one of ${IDLE_RELEASE_MODES.join(", ")}`)),
  /** ADOPT_POOLS "true" gives every standalone pool a same-named Env on the tick (opt-in). */
  ADOPT_POOLS: v.optional(
    v.pipe(
      v.picklist(["true", "false"], 'must be "true" or "false"'),
      v.transform((s) => s === "true"),
    ),
    "false",
  ),
  /** TEAM_SANDBOX_LIMIT(S): the sandboxes a team may hold at once, as on the Node host. */
  TEAM_SANDBOX_LIMIT: v.optional(v.string()),
  TEAM_SANDBOX_LIMITS: v.optional(v.string()),
  /**
   * SANDBOX_DOMAIN is the sandbox domain of the router deployment that serves this cluster's
   * sandbox traffic (the Worker has no route to pods): the E2B answers' `domain`, the native GET's
   * URLs. As the Node host's AGENTBOX_SANDBOX_DOMAIN; unset, E2B answers say a `.invalid` domain
   * the SDK cannot reach (ADR 0026).
   */
  SANDBOX_DOMAIN: v.optional(v.string()),
  /** INSTANCE_TYPES is the instance type catalog's ConfigMap, "namespace/name", as the Node host's. */
  INSTANCE_TYPES: v.optional(
    ConfigMapRefSetting,
    `${DEFAULT_INSTANCE_TYPES.namespace}/${DEFAULT_INSTANCE_TYPES.name}`,
  ),
  /**
   * SNAPSHOT_RETENTION_SECONDS is how long a paused sandbox is kept unresumed, as the Node host's
   * AGENTBOX_SNAPSHOT_RETENTION_SECONDS (whole seconds, at least 60; a week by default).
   */
  SNAPSHOT_RETENTION_SECONDS: v.optional(
    SnapshotRetentionSetting,
    String(DEFAULT_SNAPSHOT_RETENTION_SECONDS),
  ),
  /** TICK_NAMESPACE limits the tick to one namespace (a namespace-scoped deployment). */
  TICK_NAMESPACE: v.optional(
    v.pipe(v.string(), v.regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "must be a namespace name")),
  ),
});
export type WorkerConfig = v.InferOutput<typeof WorkerEnvSchema>;

/**
 * WorkerBindings is the Worker's env as declared: `Env` is what `npm run worker:types` generates
 * from wrangler.toml (vars and the D1 binding); secrets and optional vars are added here. Values
 * are still validated at run time (readWorkerEnv): a declaration is not a deployment.
 */
export type WorkerBindings = Env & {
  KUBE_TOKEN?: string;
  CALLBACK_TOKEN?: string;
  ADMIN_TOKEN?: string;
  METRICS_TOKEN?: string;
  SEALING_KEY?: string;
  ENVD_PORT?: string;
  TICK_NAMESPACE?: string;
  SANDBOX_DOMAIN?: string;
  CLUSTER_ID?: string;
  ADOPT_POOLS?: string;
  IDLE_RELEASE?: string;
  ACTIVITY_SOURCE_URL?: string;
  ACTIVITY_SOURCE_TOKEN?: string;
  TEAM_SANDBOX_LIMIT?: string;
  TEAM_SANDBOX_LIMITS?: string;
  INSTANCE_TYPES?: string;
  /** KUBE_MTLS is an optional [[mtls_certificates]] binding: requests to the apiserver go through it. */
  KUBE_MTLS?: { fetch: typeof fetch };
};

/**
 * readWorkerEnv validates the Worker's bindings and names every missing or bad one (never echoing
 * a secret's value), so a misconfigured Worker answers a clear 500 and a failed tick log line.
 */
export function readWorkerEnv(
  bindings: WorkerBindings | Record<string, unknown>,
): { ok: true; value: WorkerConfig } | { ok: false; errors: string[] } {
  const env = bindings as Record<string, unknown>;
  const errors: string[] = [];
  const history = env.HISTORY as { prepare?: unknown } | undefined;
  if (!history || typeof history.prepare !== "function")
    errors.push('HISTORY: a D1 database binding is required ([[d1_databases]] binding = "HISTORY")');
  const required = {
    KUBE_API_URL: "var",
    KUBE_TOKEN: "secret",
    CALLBACK_TOKEN: "secret",
    ADMIN_TOKEN: "secret",
  };
  for (const [name, kind] of Object.entries(required))
    if (env[name] === undefined || env[name] === "")
      errors.push(
        kind === "secret"
          ? `${name}: is required (a secret: npx wrangler secret put ${name})`
          : `${name}: is required (a var in wrangler.toml)`,
      );
  if (errors.length) return { ok: false, errors };
  const parsed = parseWith(WorkerEnvSchema, env);
  if (!parsed.ok) errors.push(...parsed.issues.map((i) => `${i.path}: ${i.message}`));
  const idle =
    parsed.ok &&
    idleReleaseMode(
      parsed.value.IDLE_RELEASE,
      parsed.value.ACTIVITY_SOURCE_URL !== undefined,
      "ACTIVITY_SOURCE_URL",
    );
  if (idle && !idle.ok) errors.push(`IDLE_RELEASE: ${idle.error}`);
  const limits =
    parsed.ok && parseTeamLimits(parsed.value.TEAM_SANDBOX_LIMIT, parsed.value.TEAM_SANDBOX_LIMITS);
  if (limits && !limits.ok) errors.push(`TEAM_SANDBOX_LIMIT(S): ${limits.error}`);
  const domainSetting = parsed.ok ? parsed.value.SANDBOX_DOMAIN : undefined;
  const domain = domainSetting === undefined ? undefined : checkSandboxDomain(domainSetting);
  if (domain && !domain.ok) errors.push(`SANDBOX_DOMAIN: ${domain.error}`);
  if (errors.length || !parsed.ok) return { ok: false, errors };
  return {
    ok: true,
    value: { ...parsed.value, ...(domain?.ok ? { SANDBOX_DOMAIN: domain.domain } : {}) },
  };
}
