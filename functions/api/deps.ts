import type { V1Pod, V1Secret } from "@kubernetes/client-node";
import type { TeamLimits } from "../../lib/claims/team-limits.ts";
import type { KubeWatchTransport } from "../../lib/kube/transport.ts";
import type { PacedRead } from "../../lib/util/paced-read.ts";
import type { NextReads, SharedRead } from "../../lib/util/shared-read.ts";
import type { IdleDispatch } from "../cache/idle-dispatch.ts";
import type { IdleFeed } from "../cache/idle-feed.ts";
import type { PoolPodWatch } from "../cache/pool-pod-watch.ts";
import type { StepDeps } from "../deps.ts";
import type { CreateStamps } from "./create-stamps.ts";
import type { PendingGauge } from "./pending-gauge.ts";
import type { TeamHolds } from "./team-usage.ts";

/** ApiDeps adds what the sandbox API needs beyond the reconcile steps. */
export interface ApiDeps extends StepDeps {
  /** The Secret holding hashed API keys (data: sha256(key) → tenant entry). */
  apiKeys: { namespace: string; name: string };
  /** random spreads concurrent claims over different candidates. */
  random: () => number;
  /** pending publishes this host's waiting creates per pool (status.pendingRequests); optional. */
  pending?: PendingGauge;
  /** idle shares one idle-pod watch among this host's waiting creates (one per request when unset). */
  idle?: IdleDispatch;
  /** idleFeed hands this host's creates candidates from one list and watch of a pool's idle pods (ADR 0024). */
  idleFeed?: IdleFeed;
  /** pods shares one watch of a pool's pods among this host's creates waiting for Running (ADR 0023). */
  pods?: PoolPodWatch;
  /** stamps throttles this host's last-sandbox-create-time writes per pool; optional. */
  stamps?: CreateStamps;
  /** envdPort is the port post-start hooks reach envd on (default 49983, E2B's). */
  envdPort?: number;
  /**
   * hashKey computes hashApiKey's value where the platform has a synchronous SHA-256 (the Node
   * host: node:crypto); hashApiKey's WebCrypto digest when unset (the Worker).
   */
  hashKey?: (key: string) => string;
  /**
   * keyReads paces the key check's etcd reads of the keys Secret, for keys the shared read does
   * not show, to one per KEY_MISS_GAP_MS per host (each after its callers asked; authenticate.ts).
   */
  keyReads?: PacedRead<V1Secret | undefined>;
  /** keyCacheReads shares the key check's watch-cache reads of the keys Secret likewise (ADR 0020). */
  keyCacheReads?: SharedRead<V1Secret | undefined>;
  /**
   * freshLooks shares a create's consistent list of a pool's idle pods (after lost claims) with
   * this host's other creates asking at the same moment, never with one that asked after it began.
   */
  freshLooks?: NextReads<V1Pod[]>;
  /** teamLimits cap each team's sandboxes held at once (none when unset). */
  teamLimits?: TeamLimits;
  /** teamHolds checks this host's claims against teamLimits as they happen (one per create when unset). */
  teamHolds?: TeamHolds;
  /**
   * onReleased hears each sandbox this host released through the API (the Node host's data plane
   * forgets its route at once; other hosts' routes go with their watch's next event).
   */
  onReleased?: (sandboxId: string) => void;
  /**
   * stopping aborts when the host's shutdown grace is over (ADR 0029): creates still waiting stop,
   * hand their starts back (waitForRunning) and answer 503. Never aborted on hosts without one.
   */
  stopping?: AbortSignal;
  /** watch streams watch requests (waiting for a sandbox to run). */
  watch: KubeWatchTransport;
}
