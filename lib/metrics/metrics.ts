// The Prometheus metrics of the Node host, on a registry the caller owns (one per thread; the
// host merges the reconciler thread's into its own /metrics). Names and labels of agentbox's
// metrics are kept, so its users' dashboards and alerts work unchanged; the rest are ours.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { PhaseMetric } from "../kube/action.ts";
import { POOL_PHASES, type PoolLabels, type PoolPhase, poolGaugeHelp } from "./pool-phases.ts";

export { POOL_PHASES, type PoolLabels, type PoolPhase };

/**
 * CLAIM_BUCKETS suit millisecond claims and the waits around them: 1 ms to 60 s (a create that
 * waits for an idle pod or for its sandbox to run).
 */
export const CLAIM_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
] as const;

/** LIFETIME_BUCKETS suit sandbox phases: a start or recycle (100 ms up) to a session (hours). */
export const LIFETIME_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400] as const;

/** PROXY_BUCKETS suit the router's time to a response head: half a millisecond to a minute. */
export const PROXY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 60] as const;

/** PortClass labels the router's metrics: envd's port, a sandbox's other ports, or none (refused before a port was known). */
export type PortClass = "envd" | "other" | "none";

/**
 * Metrics are the host's instruments. Each is optional to its users (HostDeps.metrics,
 * HostDeps.metrics): code paths observe when a registry was handed in, and tests without one
 * run the same code.
 */
export interface Metrics {
  registry: Registry;
  poolReplicas: Record<PoolPhase, Gauge<keyof PoolLabels>>;
  /** poolSeries are the labels each pool's gauges carry now ("namespace/name"; see setPoolGauges). */
  poolSeries: Map<string, PoolLabels>;
  claimDuration: Histogram<"outcome">;
  /** phases are the phase-duration histograms, by the PhaseMetric an action ends. */
  phases: Record<PhaseMetric, Histogram<never>>;
  creates: Counter<"namespace" | "pool">;
  deletes: Counter<"namespace" | "pool">;
  inplaceUpdates: Counter<"direction">;
  httpRequests: Counter<"method" | "route" | "code">;
  httpDuration: Histogram<"method" | "route">;
  e2bUnsupported: Counter<"operation">;
  autoscalerDecisions: Counter<"direction" | "reason">;
  apiserverRequests: Counter<"verb" | "resource" | "code">;
  apiserverDuration: Histogram<"verb" | "resource">;
  apiserverConflicts: Counter<"verb" | "resource" | "transition">;
  auditEvents: Counter<never>;
  /** informers are the watch-fed caches' instruments (functions/cache/informer.ts), by cache name. */
  informers: {
    events: Counter<"informer" | "type">;
    lists: Counter<"informer" | "cause">;
    watches: Counter<"informer" | "end">;
  };
  auditLag: Histogram<never>;
  tickDuration: Histogram<never>;
  tickLastSuccess: Gauge<never>;
  reconcilerRestarts: Counter<never>;
  dataPlaneRestarts: Counter<never>;
  /** dataPlane are the sandbox router's instruments (hosts/node/data-plane), by port class. */
  dataPlane: {
    requests: Counter<"port_class" | "code">;
    bytes: Counter<"port_class" | "direction">;
    openStreams: Gauge<"port_class">;
    upstreamErrors: Counter<"port_class">;
    latency: Histogram<"port_class">;
  };
}

/** createMetrics registers every instrument on `registry` (not prom-client's global one). */
export function createMetrics(registry: Registry): Metrics {
  const registers = [registry];
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new Gauge<L>({ name, help, labelNames, registers });
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Counter<L>({ name, help, labelNames, registers });
  const histogram = <L extends string>(
    name: string,
    help: string,
    buckets: readonly number[],
    labelNames: readonly L[] = [],
  ) => new Histogram<L>({ name, help, labelNames, buckets: [...buckets], registers });
  const poolLabels = ["namespace", "pool", "sandbox_env"] as const;
  const poolReplicas = Object.fromEntries(
    POOL_PHASES.map((phase) => [
      phase,
      gauge(
        `agentbox_sandboxpool_replicas_${phase}`,
        poolGaugeHelp(phase, "as its last run saw them"),
        poolLabels,
      ),
    ]),
  ) as Record<PoolPhase, Gauge<keyof PoolLabels>>;
  return {
    registry,
    poolReplicas,
    poolSeries: new Map(),
    claimDuration: histogram(
      "agentbox_sandbox_claim_duration_seconds",
      "A create's claim of an idle pod, from the request to its answer, by outcome.",
      CLAIM_BUCKETS,
      ["outcome"],
    ),
    phases: {
      starting: histogram(
        "agentbox_sandbox_starting_duration_seconds",
        "A sandbox's start: from its claim to Running.",
        LIFETIME_BUCKETS,
      ),
      running: histogram(
        "agentbox_sandbox_running_duration_seconds",
        "A sandbox's life: from Running to its stop (recorded when its pod is back to idle).",
        LIFETIME_BUCKETS,
      ),
      recycle: histogram(
        "agentbox_sandbox_recycle_duration_seconds",
        "A pod's way back to idle: from Stopping to Idle.",
        LIFETIME_BUCKETS,
      ),
    },
    creates: counter("agentbox_sandbox_create_total", "Sandboxes created (claims that won).", [
      "namespace",
      "pool",
    ]),
    deletes: counter("agentbox_sandbox_delete_total", "Sandboxes released through the API.", [
      "namespace",
      "pool",
    ]),
    inplaceUpdates: counter(
      "agentbox_inplace_update_total",
      "In-place image updates written: start (claim) or stop (release).",
      ["direction"],
    ),
    httpRequests: counter("agentbox_http_requests_total", "HTTP requests served, by route template.", [
      "method",
      "route",
      "code",
    ]),
    httpDuration: histogram(
      "agentbox_http_request_duration_seconds",
      "HTTP request duration, by route template.",
      CLAIM_BUCKETS,
      ["method", "route"],
    ),
    e2bUnsupported: counter(
      "agentbox_e2b_unsupported_total",
      "E2B API calls this control plane does not support, by operation.",
      ["operation"],
    ),
    autoscalerDecisions: counter(
      "agentbox_autoscaler_decisions_total",
      "Autoscaler decisions that changed a group's replicas, by direction and reason.",
      ["direction", "reason"],
    ),
    apiserverRequests: counter(
      "agentbox_apiserver_requests_total",
      "Requests this host sent the apiserver, by verb, resource and HTTP code (0: no answer).",
      ["verb", "resource", "code"],
    ),
    apiserverDuration: histogram(
      "agentbox_apiserver_request_duration_seconds",
      "Duration of this host's apiserver requests (watches excluded).",
      CLAIM_BUCKETS,
      ["verb", "resource"],
    ),
    apiserverConflicts: counter(
      "agentbox_apiserver_conflicts_total",
      "Preconditioned writes that lost (409, or 422 from a failed JSON Patch test), by the sandbox phase a pod patch tried to reach.",
      ["verb", "resource", "transition"],
    ),
    auditEvents: counter("agentbox_audit_events_total", "Audit events received from the apiserver."),
    informers: {
      events: counter(
        "agentbox_informer_events_total",
        "Watch events the host's watch-fed caches received, by cache and event type (BOOKMARK included).",
        ["informer", "type"],
      ),
      lists: counter(
        "agentbox_informer_lists_total",
        "Lists the watch-fed caches made, by cache and cause (start, gone: 410, failed, asked).",
        ["informer", "cause"],
      ),
      watches: counter(
        "agentbox_informer_watches_total",
        "Watches the watch-fed caches opened, by cache and how each ended (ended, gone, failed, stopped).",
        ["informer", "end"],
      ),
    },
    auditLag: histogram(
      "agentbox_audit_lag_seconds",
      "From an audited request's completion (its stageTimestamp) to its batch reaching this host.",
      CLAIM_BUCKETS,
    ),
    tickDuration: histogram("agentbox_tick_duration_seconds", "Duration of a reconcile tick.", CLAIM_BUCKETS),
    // Kept by the reconciler thread only; "max" when the host merges its threads' registries.
    tickLastSuccess: new Gauge({
      name: "agentbox_tick_last_success_timestamp_seconds",
      help: "When the last tick that listed every pool ended (Unix seconds).",
      aggregator: "max",
      registers,
    }),
    reconcilerRestarts: counter(
      "agentbox_reconciler_thread_restarts_total",
      "Times the reconciler thread died and was started again.",
    ),
    dataPlaneRestarts: counter(
      "agentbox_dataplane_thread_restarts_total",
      "Times the sandbox router's thread died and was started again.",
    ),
    dataPlane: {
      requests: counter(
        "agentbox_dataplane_requests_total",
        "Requests the sandbox router answered, by port class and status class (2xx…; refusals have port class none).",
        ["port_class", "code"],
      ),
      bytes: counter(
        "agentbox_dataplane_bytes_total",
        "Body bytes the sandbox router carried, by port class and direction (in: to the sandbox).",
        ["port_class", "direction"],
      ),
      openStreams: gauge(
        "agentbox_dataplane_open_streams",
        "Proxied requests and upgraded connections open now, by port class.",
        ["port_class"],
      ),
      upstreamErrors: counter(
        "agentbox_dataplane_upstream_errors_total",
        "Proxied requests the sandbox failed (no answer, or an answer cut short), by port class.",
        ["port_class"],
      ),
      latency: histogram(
        "agentbox_dataplane_response_head_seconds",
        "From a proxied request's arrival to its response head leaving the router (the sandbox's time included).",
        PROXY_BUCKETS,
        ["port_class"],
      ),
    },
  };
}
