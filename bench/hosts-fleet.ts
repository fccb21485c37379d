// Several Node hosts over one benchmark cluster (issue #25), each a process of its own: host 0 on
// the port the apiserver sends its audit events and webhooks to, peers on ports of their own, each
// with its own history file and instance id, and what each counted, read from its /metrics.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { freePorts } from "../infra/cluster/ports.ts";
import type { ClusterState } from "../infra/cluster/state.ts";
import { parseExposition } from "../lib/metrics/parse-exposition.ts";
import { BENCH_METRICS_TOKEN, forkHost, type HostProcess, httpsClient, type Send } from "./support.ts";

/** Peer is one host of a several-host bench: its process, the port it serves on, its /metrics. */
export interface Peer {
  host: HostProcess;
  port: number;
  metrics: Send;
}

/**
 * instanceId is host `index`'s own instance id (AGENTBOX_INSTANCE_ID of `npm start`): the default,
 * the machine's hostname, would be every host's here, and they would share pending-demand marks.
 */
export const instanceId = (index: number) => `bench-host-${index}`;

/** metricsClient reads the /metrics of the host serving on port. */
export function metricsClient(state: ClusterState, port: number): Send {
  const ca = readFileSync(state.caCert);
  return httpsClient(`https://127.0.0.1:${port}`, ca, { authorization: `Bearer ${BENCH_METRICS_TOKEN}` }, 2);
}

/**
 * forkPeer starts host `index` (1 and up) of a cluster whose host 0 runs already: on a free port,
 * with its own history file and instance id, its reconciles on (it ticks; audit events go to
 * host 0 only, as they reach one replica behind a Service).
 */
export async function forkPeer(state: ClusterState, index: number): Promise<Peer> {
  const [port = 0] = await freePorts(1);
  const host = await forkHost(state, "on", {
    listen: { host: "127.0.0.1", port, certFile: state.webhookCert, keyFile: state.webhookKey },
    historyPath: join(state.dir, `bench-history-${index}.sqlite`),
    instanceId: instanceId(index),
  });
  return { host, port, metrics: metricsClient(state, port) };
}

/**
 * HostCounters are one host's counters: requests by "verb resource", preconditioned writes that
 * lost by "verb resource → transition" (a pod patch to "starting" is a claim), ticks ended.
 */
export interface HostCounters {
  verbs: Map<string, number>;
  conflicts: Map<string, number>;
  ticks: number;
}

/** hostCounters reads one host's counters from its /metrics. */
export async function hostCounters(metrics: Send): Promise<HostCounters> {
  const s = parseExposition((await metrics("GET", "/metrics")).body).samples;
  const add = (m: Map<string, number>, key: string, v: number) => m.set(key, (m.get(key) ?? 0) + v);
  const verbs = new Map<string, number>();
  const conflicts = new Map<string, number>();
  let ticks = 0;
  for (const x of s) {
    if (x.name === "agentbox_apiserver_requests_total")
      add(verbs, `${x.labels.verb} ${x.labels.resource}`, x.value);
    else if (x.name === "agentbox_apiserver_conflicts_total")
      add(conflicts, `${x.labels.verb} ${x.labels.resource} → ${x.labels.transition || "(other)"}`, x.value);
    else if (x.name === "agentbox_tick_duration_seconds_count") ticks += x.value;
  }
  return { verbs, conflicts, ticks };
}

/** total sums a counter map (all requests, all conflicts). */
export const total = (m: ReadonlyMap<string, number>) => [...m.values()].reduce((a, v) => a + v, 0);
