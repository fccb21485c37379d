import type { HistoryStore } from "../lib/history/store.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import type { Log } from "../lib/log.ts";
import type { DigestResolver } from "../lib/sandbox/digest-resolver.ts";
import type { PullActivity } from "./activity-source.ts";

/**
 * StepDeps is everything a reconcile step touches, passed in explicitly: the API server, the
 * history store, the clock, the log, the image digest resolver and the optional pulled activity
 * source. No module-level state, so both hosts and the tests hand in their own pieces.
 */
export interface StepDeps {
  kube: KubeClient;
  history: HistoryStore;
  now: () => Date;
  log: Log;
  digests: DigestResolver;
  /** Who we are in Events (reportingController / reportingInstance). */
  reporter: { controller: string; instance: string };
  /**
   * pullActivity, when set, is the pulled activity source the idle-release step reads before it
   * decides (functions/activity-source.ts); unset, only the last-active annotation counts.
   */
  pullActivity?: PullActivity;
}
