import type { KubeWatchTransport } from "../../lib/kube/transport.ts";
import type { StepDeps } from "../deps.ts";
import type { PoolPodWatch } from "./pool-pod-watch.ts";

/**
 * ViewDeps is what a host's watch-fed views (the idle feed, the pool pod watch, the idle
 * dispatch, one pod followed) need: the client, a watch transport, a clock, randomness, a log,
 * and the shared pod watch when the host has one. The views are hints a host keeps for speed,
 * never the authority: the API's handlers use them (functions/api/deps.ts names them), they
 * never import the handlers.
 */
export interface ViewDeps extends Pick<StepDeps, "kube" | "log" | "now"> {
  watch: KubeWatchTransport;
  random: () => number;
  /** pods shares one watch of a pool's pods among this host's creates waiting for Running. */
  pods?: PoolPodWatch;
}
