// What a Node host is started with (startHost), kept apart from how it runs: in-cluster.ts builds
// it from `npm run serve`'s environment (config.ts), npm-start.ts from `npm start`'s, and the
// tests and benchmarks directly.
import type { KubeConfig } from "@kubernetes/client-node";
import type { ActivitySourceConfig } from "../../functions/activity-source.ts";
import type { DecideOptions } from "../../lib/autoscale/group-decision.ts";
import type { TeamLimits } from "../../lib/claims/team-limits.ts";
import type { ConfigMapRef } from "../../lib/env/instance-types.ts";
import type { KubeTimeouts } from "../../lib/kube/transport.ts";
import type { IdleReleaseMode } from "../../lib/reconcile/idle-release.ts";
import type { Log } from "../../lib/util/log.ts";
import type { AuditEventList } from "../../webhooks/audit.ts";
import type { DataPlaneSettings } from "./data-plane/settings.ts";
import type { PostgresHistorySettings } from "./postgres-history.ts";

/** HostConfig is a Node host's settings: its cluster, listeners, tokens, stores and tuning. */
export interface HostConfig {
  kubeconfig: KubeConfig;
  /** Token the apiserver presents to /admission and /audit. */
  callbackToken: string;
  /** Token operators present to /functions. */
  adminToken: string;
  historyPath: string;
  /** historyDatabase keeps the history in PostgreSQL instead of historyPath (AGENTBOX_HISTORY_URL). */
  historyDatabase?: PostgresHistorySettings;
  listen: { host: string; port: number; certFile: string; keyFile: string };
  /** Tick period in seconds; 0 turns the tick off (audit events and manual triggers only). */
  tickSeconds: number;
  tickConcurrency: number;
  log: Log;
  /**
   * auditNamespacePrefix limits what audit events may trigger to namespaces with this prefix (all
   * by default; the integration tests keep background runs out of their own namespaces).
   */
  auditNamespacePrefix?: string;
  /** auditTriggers false: audit events trigger no runs at all (benchmarks of the API alone). */
  auditTriggers?: boolean;
  /** clusterId is the local cluster's ID: the Env step materialises that segment only. */
  clusterId?: string;
  /**
   * instanceId names this host among the replicas (both threads' Events, its pending-demand
   * marks); default the hostname. Hosts sharing a hostname (one machine) need distinct ones.
   */
  instanceId?: string;
  /** adoptPools gives every standalone pool a same-named Env on the tick (opt-in). */
  adoptPools?: boolean;
  /** autoscale: the autoscaler's settings besides the groups' policies (benchmarks only, ADR 0034). */
  autoscale?: DecideOptions;
  /** instanceTypes is the instance type catalog's ConfigMap (default agentbox-system/agentbox-instance-types). */
  instanceTypes?: ConfigMapRef;
  /**
   * idleRelease is what counts as activity for idle timeouts (default: pulled when the host has a
   * source, the router (dataPlane) or activitySource, else reported).
   */
  idleRelease?: IdleReleaseMode;
  /** Where the hashed API keys live (default agentbox-system/agentbox-api-keys). */
  apiKeys?: { namespace: string; name: string };
  /**
   * sealingKey (≥ 32 characters) seals claims' env vars into their pods and derives envd access
   * tokens; without it, creates with env vars and the E2B API answer 400.
   */
  sealingKey?: string;
  /** envdPort is where post-start hooks reach envd in a pod (default 49983). */
  envdPort?: number;
  /** sandboxDomain is where sandbox ports are reached (AGENTBOX_SANDBOX_DOMAIN; AppDeps.sandboxDomain). */
  sandboxDomain?: string;
  /** postStartDeadlineSeconds after the start, sandboxes whose hooks still fail are released (60). */
  postStartDeadlineSeconds?: number;
  /** The pulled activity source idle-release asks first (none: the last-active annotation only). */
  activitySource?: ActivitySourceConfig;
  /** teamLimits cap each team's sandboxes held at once (none when unset). */
  teamLimits?: TeamLimits;
  /** kubeTimeouts bound each apiserver request by kind, in ms (DEFAULT_KUBE_TIMEOUTS). */
  kubeTimeouts?: Partial<KubeTimeouts>;
  /** onAuditEvents also receives every accepted batch (tests record them). */
  onAuditEvents?: (list: AuditEventList) => void;
  /** consoleSampleSeconds: how often the console's pool charts sample the pool gauges (30; 0: never). */
  consoleSampleSeconds?: number;
  /** snapshotRetentionSeconds: how long a paused sandbox is kept unresumed (a week). */
  snapshotRetentionSeconds?: number;
  /** usageSampleSeconds: how often the reconciler samples the sandboxes' resource use (10; 0: never). */
  usageSampleSeconds?: number;
  /** metricsToken is the bearer token /metrics asks for (default: the admin token). */
  metricsToken?: string;
  /** dataPlane runs the sandbox router (hosts/node/data-plane/) on these listeners; none when unset. */
  dataPlane?: DataPlaneSettings;
}
