import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import * as v from "valibot";
import type { ActivitySourceConfig } from "../../functions/activity-source.ts";
import { parseTeamLimits, type TeamLimits } from "../../lib/claims/team-limits.ts";
import { parseWith } from "../../lib/crd/parse-with.ts";
import { checkSandboxDomain } from "../../lib/data-plane/sandbox-domain.ts";
import {
  type ConfigMapRef,
  ConfigMapRefSetting,
  DEFAULT_INSTANCE_TYPES,
} from "../../lib/env/instance-types.ts";
import {
  IDLE_RELEASE_MODES,
  type IdleReleaseMode,
  idleReleaseMode,
} from "../../lib/reconcile/idle-release.ts";
import { readActivitySource } from "./activity-settings.ts";
import { type DataPlaneSettings, dataPlaneSettings } from "./data-plane/settings.ts";
import { DATA_PLANE_ENV } from "./data-plane/settings-env.ts";
import { readPostgresHistory } from "./history-settings.ts";
import type { PostgresHistorySettings } from "./postgres-history.ts";
import { Port } from "./setting-values.ts";
import { TIMING_ENV, type TimingSettings, timingSettings } from "./timing-settings.ts";

/**
 * INSTANCE_ID is what AGENTBOX_INSTANCE_ID may be: a lowercase label value (≤ 63), so the
 * host's pending-demand annotation key (hostKey) is the ID itself and two IDs never map to one key.
 */
const INSTANCE_ID = /^(?=.{1,63}$)[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$/;

/** IdleReleaseSetting is an optional idle-release mode (see IdleReleaseMode). */
export const IdleReleaseSetting = v.optional(
  v.picklist(IDLE_RELEASE_MODES, `must be one of ${IDLE_RELEASE_MODES.join(", ")}`),
);

/** HOST_ENV lists the Node host's settings; tokens may come inline or from files (Secret mounts). */
export const HOST_ENV = v.object({
  AGENTBOX_CALLBACK_TOKEN: v.optional(v.pipe(v.string(), v.minLength(16, "must be at least 16 characters"))),
  AGENTBOX_CALLBACK_TOKEN_FILE: v.optional(v.string()),
  AGENTBOX_ADMIN_TOKEN: v.optional(v.pipe(v.string(), v.minLength(16, "must be at least 16 characters"))),
  AGENTBOX_ADMIN_TOKEN_FILE: v.optional(v.string()),
  AGENTBOX_METRICS_TOKEN: v.optional(v.pipe(v.string(), v.minLength(16, "must be at least 16 characters"))),
  AGENTBOX_METRICS_TOKEN_FILE: v.optional(v.string()),
  AGENTBOX_TLS_CERT: v.optional(v.string()),
  AGENTBOX_TLS_KEY: v.optional(v.string()),
  AGENTBOX_LISTEN_HOST: v.optional(v.string(), "0.0.0.0"),
  AGENTBOX_LISTEN_PORT: v.optional(Port, "8443"),
  // A file: the API's thread and the reconciler's each open it (":memory:" would give each its own).
  AGENTBOX_HISTORY_PATH: v.optional(
    v.pipe(
      v.string(),
      v.check((p) => p !== ":memory:", "must be a file: the API and the reconciler thread share it"),
    ),
    "/var/lib/agentbox/history.sqlite",
  ),
  // The periods and bounds: ticks, samples, apiserver request timeouts, shutdown.
  ...TIMING_ENV,
  AGENTBOX_SEALING_KEY: v.optional(v.pipe(v.string(), v.minLength(32, "must be at least 32 characters"))),
  AGENTBOX_SEALING_KEY_FILE: v.optional(v.string()),
  AGENTBOX_ENVD_PORT: v.optional(Port, "49983"),
  // Where sandbox ports are reached: <port>-<sandboxId>.<domain> (the E2B answers' domain).
  AGENTBOX_SANDBOX_DOMAIN: v.optional(v.string()),
  // The sandbox router (hosts/node/data-plane/), run when a sandbox domain or its port is set.
  ...DATA_PLANE_ENV,
  AGENTBOX_CLUSTER_ID: v.optional(
    v.pipe(
      v.string(),
      v.regex(
        /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/,
        "must be a cluster ID such as local or eu-west-1",
      ),
    ),
  ),
  // This host's name among the replicas: its pending-demand mark and its Events' reporting instance.
  AGENTBOX_INSTANCE_ID: v.optional(
    v.pipe(
      v.string(),
      v.regex(
        INSTANCE_ID,
        "must be 1 to 63 lowercase letters, digits, '-', '_' or '.', beginning and ending with a letter or digit (a label value such as a pod name)",
      ),
    ),
  ),
  AGENTBOX_IDLE_RELEASE: IdleReleaseSetting,
  // The instance type catalog (a ConfigMap, "namespace/name") Env members are sized from.
  AGENTBOX_INSTANCE_TYPES: v.optional(
    ConfigMapRefSetting,
    `${DEFAULT_INSTANCE_TYPES.namespace}/${DEFAULT_INSTANCE_TYPES.name}`,
  ),
  AGENTBOX_ADOPT_POOLS: v.optional(
    v.pipe(
      v.picklist(["true", "false"], 'must be "true" or "false"'),
      v.transform((s) => s === "true"),
    ),
    "false",
  ),
  // How many sandboxes a team may hold at once: one cap for all, and team=n overrides.
  AGENTBOX_TEAM_SANDBOX_LIMIT: v.optional(v.string()),
  AGENTBOX_TEAM_SANDBOX_LIMITS: v.optional(v.string()),
  LOG_LEVEL: v.optional(v.picklist(["debug", "info", "warn", "error"]), "info"),
});

/** HostEnv is the validated environment (its periods and bounds: TimingSettings). */
export interface HostEnv extends TimingSettings {
  callbackToken: string;
  adminToken: string;
  /** metricsToken opens /metrics only (AGENTBOX_METRICS_TOKEN[_FILE]); unset, the admin token does. */
  metricsToken?: string;
  certFile: string;
  keyFile: string;
  host: string;
  port: number;
  historyPath: string;
  /** historyDatabase keeps the history in PostgreSQL (AGENTBOX_HISTORY_URL; readPostgresHistory). */
  historyDatabase?: PostgresHistorySettings;
  /** sealingKey seals claims' env vars and derives envd tokens; optional (see HostConfig). */
  sealingKey?: string;
  envdPort: number;
  /** sandboxDomain is where sandbox ports are reached (AGENTBOX_SANDBOX_DOMAIN); unset, E2B answers say sandbox-domain-unset.invalid (ADR 0026). */
  sandboxDomain?: string;
  /** clusterId is the local cluster's ID (the Env step's segment); unset, Envs are not reconciled. */
  clusterId?: string;
  /**
   * instanceId names this host among the replicas (AGENTBOX_INSTANCE_ID, default the hostname:
   * the pod's name in a Deployment): the key of its pending-demand marks and its Events' instance.
   */
  instanceId: string;
  /** dataPlane is the sandbox router's settings (dataPlaneSettings); unset, no router runs. */
  dataPlane?: DataPlaneSettings;
  /** adoptPools gives every standalone pool a same-named Env (opt-in). */
  adoptPools: boolean;
  /** idleRelease is what counts as activity for idle timeouts (see IdleReleaseMode). */
  idleRelease: IdleReleaseMode;
  /** instanceTypes is the instance type catalog's ConfigMap (AGENTBOX_INSTANCE_TYPES). */
  instanceTypes: ConfigMapRef;
  logLevel: string;
  /** teamLimits cap each team's sandboxes (AGENTBOX_TEAM_SANDBOX_LIMIT[S]); none when unset. */
  teamLimits?: TeamLimits;
  /** activitySource is the optional pulled activity source (readActivitySource). */
  activitySource?: ActivitySourceConfig;
}

/**
 * readHostEnv validates the environment of `npm run serve` and says exactly which variable is
 * wrong; secrets are read from *_FILE when given and never echoed in errors.
 */
export function readHostEnv(
  env: Record<string, string | undefined>,
): { ok: true; value: HostEnv } | { ok: false; errors: string[] } {
  const errors: string[] = [];
  if (!env.AGENTBOX_TLS_CERT)
    errors.push("AGENTBOX_TLS_CERT: is required (the PEM certificate the webhooks are served with)");
  if (!env.AGENTBOX_TLS_KEY) errors.push("AGENTBOX_TLS_KEY: is required (the PEM key of AGENTBOX_TLS_CERT)");
  const activity = readActivitySource(env);
  const database = readPostgresHistory(env);
  const parsed = parseWith(HOST_ENV, env);
  if (!parsed.ok || !activity.ok || !database.ok)
    return {
      ok: false,
      errors: [
        ...errors,
        ...(parsed.ok ? [] : parsed.issues.map((i) => `${i.path}: ${i.message}`)),
        ...(activity.ok ? [] : activity.errors),
        ...(database.ok ? [] : database.errors),
      ],
    };
  const e = parsed.value;
  const secret = (name: string, inline: string | undefined, file: string | undefined) => {
    if (inline) return inline;
    if (file) {
      try {
        const value = readFileSync(file, "utf8").trim();
        if (value.length >= 16) return value;
        errors.push(`${name}_FILE: ${file} holds fewer than 16 characters`);
      } catch (err) {
        errors.push(`${name}_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? "error"})`);
      }
      return "";
    }
    errors.push(`${name}: is required (or ${name}_FILE)`);
    return "";
  };
  const callbackToken = secret(
    "AGENTBOX_CALLBACK_TOKEN",
    e.AGENTBOX_CALLBACK_TOKEN,
    e.AGENTBOX_CALLBACK_TOKEN_FILE,
  );
  const adminToken = secret("AGENTBOX_ADMIN_TOKEN", e.AGENTBOX_ADMIN_TOKEN, e.AGENTBOX_ADMIN_TOKEN_FILE);
  // Optional: a scraper's token that opens /metrics and nothing else (else the admin token does).
  const metricsToken =
    e.AGENTBOX_METRICS_TOKEN || e.AGENTBOX_METRICS_TOKEN_FILE
      ? secret("AGENTBOX_METRICS_TOKEN", e.AGENTBOX_METRICS_TOKEN, e.AGENTBOX_METRICS_TOKEN_FILE)
      : undefined;
  let sealingKey = e.AGENTBOX_SEALING_KEY;
  if (!sealingKey && e.AGENTBOX_SEALING_KEY_FILE) {
    try {
      sealingKey = readFileSync(e.AGENTBOX_SEALING_KEY_FILE, "utf8").trim();
      if (sealingKey.length < 32)
        errors.push(
          `AGENTBOX_SEALING_KEY_FILE: ${e.AGENTBOX_SEALING_KEY_FILE} holds fewer than 32 characters`,
        );
    } catch (err) {
      errors.push(
        `AGENTBOX_SEALING_KEY_FILE: cannot read ${e.AGENTBOX_SEALING_KEY_FILE} (${(err as NodeJS.ErrnoException).code ?? "error"})`,
      );
    }
  }
  const dataPlane = dataPlaneSettings(e);
  // The router is an activity source of its own (its traffic), as a pulled source is.
  const idle = idleReleaseMode(
    e.AGENTBOX_IDLE_RELEASE,
    activity.value !== undefined || dataPlane !== undefined,
    "AGENTBOX_ACTIVITY_SOURCE_URL, or the sandbox router: AGENTBOX_SANDBOX_DOMAIN or AGENTBOX_DATA_PLANE_PORT",
  );
  if (!idle.ok) errors.push(`AGENTBOX_IDLE_RELEASE: ${idle.error}`);
  const limits = parseTeamLimits(e.AGENTBOX_TEAM_SANDBOX_LIMIT, e.AGENTBOX_TEAM_SANDBOX_LIMITS);
  if (!limits.ok) errors.push(`AGENTBOX_TEAM_SANDBOX_LIMIT(S): ${limits.error}`);
  const domain =
    e.AGENTBOX_SANDBOX_DOMAIN === undefined ? undefined : checkSandboxDomain(e.AGENTBOX_SANDBOX_DOMAIN);
  if (domain && !domain.ok) errors.push(`AGENTBOX_SANDBOX_DOMAIN: ${domain.error}`);
  if (dataPlane && dataPlane.plainPort === e.AGENTBOX_LISTEN_PORT)
    errors.push("AGENTBOX_DATA_PLANE_PORT: must differ from AGENTBOX_LISTEN_PORT");
  if (
    dataPlane?.tlsPort !== undefined &&
    [e.AGENTBOX_LISTEN_PORT, dataPlane.plainPort].includes(dataPlane.tlsPort)
  )
    errors.push(
      "AGENTBOX_DATA_PLANE_TLS_PORT: must differ from AGENTBOX_LISTEN_PORT and AGENTBOX_DATA_PLANE_PORT",
    );
  if (callbackToken && callbackToken === adminToken)
    errors.push("AGENTBOX_ADMIN_TOKEN: must differ from the callback token");
  if (metricsToken && metricsToken === callbackToken)
    errors.push("AGENTBOX_METRICS_TOKEN: must differ from the callback token");
  if (errors.length) return { ok: false, errors };
  return {
    ok: true,
    value: {
      callbackToken,
      adminToken,
      ...(metricsToken ? { metricsToken } : {}),
      certFile: e.AGENTBOX_TLS_CERT ?? "",
      keyFile: e.AGENTBOX_TLS_KEY ?? "",
      host: e.AGENTBOX_LISTEN_HOST,
      port: e.AGENTBOX_LISTEN_PORT,
      historyPath: e.AGENTBOX_HISTORY_PATH,
      ...(database.value ? { historyDatabase: database.value } : {}),
      ...timingSettings(e),
      ...(sealingKey ? { sealingKey } : {}),
      envdPort: e.AGENTBOX_ENVD_PORT,
      ...(domain?.ok ? { sandboxDomain: domain.domain } : {}),
      ...(e.AGENTBOX_CLUSTER_ID ? { clusterId: e.AGENTBOX_CLUSTER_ID } : {}),
      instanceId: e.AGENTBOX_INSTANCE_ID ?? hostname(),
      ...(dataPlane ? { dataPlane } : {}),
      adoptPools: e.AGENTBOX_ADOPT_POOLS,
      idleRelease: idle.ok ? idle.mode : "off",
      instanceTypes: e.AGENTBOX_INSTANCE_TYPES,
      logLevel: e.LOG_LEVEL,
      ...(limits.ok && limits.value ? { teamLimits: limits.value } : {}),
      ...(activity.value ? { activitySource: activity.value } : {}),
    },
  };
}
