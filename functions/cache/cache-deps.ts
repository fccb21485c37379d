import type { KubeClient } from "../../lib/kube/client.ts";
import type { KubeWatchTransport } from "../../lib/kube/transport.ts";
import type { Metrics } from "../../lib/metrics/metrics.ts";
import type { Log } from "../../lib/util/log.ts";
import type { PoolPodWatch } from "./pool-pod-watch.ts";

/**
 * CacheDeps is what a host's watch-fed caches (the idle feed, the pool pod watch, the idle
 * dispatch, one pod followed) need: the client, a watch transport, a clock, randomness, a log,
 * the host's metrics, and the shared pod watch when the host has one. HostDeps
 * (functions/host-deps.ts) carries all of them; the caches name only these, so they never import
 * the handlers that use them.
 */
export interface CacheDeps {
  kube: KubeClient;
  watch: KubeWatchTransport;
  log: Log;
  now: () => Date;
  random: () => number;
  metrics?: Metrics | undefined;
  /** pods shares one watch of a pool's pods among this host's creates waiting for Running. */
  pods?: PoolPodWatch | undefined;
}
