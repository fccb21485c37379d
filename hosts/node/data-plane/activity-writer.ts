// The router's writes of agentbox.navix.sh/last-active: once a second it asks planActivityWrites
// which routed sandboxes' traffic moved on by their throttle and patches those pods, a few at a
// time. The annotation is the shared truth between hosts: a host's idle release reads it for
// traffic that went through another host (its own traffic it asks Traffic directly).
//
// A write tests the pod's sandbox-id label and the last-active it replaces (never the
// resourceVersion: traffic must not lose to every status change), so it can only land on the pod
// of the sandbox it is for, and never moves another host's later time backwards; a pod released
// meanwhile (label gone or changed) or deleted fails the test and is dropped, a last-active
// another host moved is compared again at the next flush, from the watch's newer view.
import pLimit from "p-limit";
import type { CacheDeps } from "../../../functions/cache/cache-deps.ts";
import { LAST_ACTIVE_ANNOTATION, SANDBOX_ID_LABEL } from "../../../lib/crd/keys.ts";
import { type ActivityWrite, planActivityWrites } from "../../../lib/data-plane/activity-writes.ts";
import { isConflict, isNotFound } from "../../../lib/kube/errors.ts";
import { escapePointer } from "../../../lib/kube/json-patch.ts";
import type { RouteTable } from "./route-table.ts";
import type { Traffic } from "./traffic.ts";

/** FLUSH_MS: how often the writer looks for activity to persist. */
export const FLUSH_MS = 1000;

/** WRITE_CONCURRENCY: how many annotation writes are in flight at once. */
const WRITE_CONCURRENCY = 8;

/** ActivityWriter persists the router's traffic as last-active annotations. */
export class ActivityWriter {
  /** written: this host's last write per sandbox (the watch may not show it yet). */
  private readonly written = new Map<string, string>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private inFlight: Promise<number> | undefined;
  private readonly limit = pLimit(WRITE_CONCURRENCY);

  private readonly deps: Pick<CacheDeps, "kube" | "log">;
  private readonly routes: RouteTable;
  private readonly traffic: Traffic;

  constructor(deps: Pick<CacheDeps, "kube" | "log">, routes: RouteTable, traffic: Traffic) {
    this.deps = deps;
    this.routes = routes;
    this.traffic = traffic;
  }

  /** start flushes every FLUSH_MS until close. */
  start(intervalMs = FLUSH_MS): void {
    this.timer ??= setInterval(() => {
      this.flush().catch(() => {});
    }, intervalMs);
    this.timer.unref();
  }

  /** close stops the flushes and waits for the one under way. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.inFlight?.catch(() => {});
  }

  /** forget drops a sandbox's last write (its route went). */
  forget(sandboxId: string): void {
    this.written.delete(sandboxId);
  }

  /** flush writes what the plan asks now and says how many writes landed (one flush at a time). */
  flush(): Promise<number> {
    this.inFlight ??= this.writeAll().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async writeAll(): Promise<number> {
    const writes = planActivityWrites(this.routes.all(), this.traffic.seen(), this.written);
    const outcomes = await Promise.all(writes.map((w) => this.limit(() => this.write(w))));
    const failures = outcomes.filter((o): o is Error => o instanceof Error);
    if (failures.length)
      this.deps.log.warn(
        { err: String(failures[0]), failed: failures.length },
        "data plane: last-active writes failed; trying again",
      );
    return outcomes.filter((o) => o === true).length;
  }

  /** write says true (landed), false (the pod is no longer that sandbox's) or the error. */
  private async write(w: ActivityWrite): Promise<boolean | Error> {
    try {
      const annotation = `/metadata/annotations/${escapePointer(LAST_ACTIVE_ANNOTATION)}`;
      await this.deps.kube.patchPod(w.namespace, w.podName, [
        { op: "test", path: `/metadata/labels/${escapePointer(SANDBOX_ID_LABEL)}`, value: w.sandboxId },
        ...(w.expected === undefined ? [] : [{ op: "test" as const, path: annotation, value: w.expected }]),
        { op: "add", path: annotation, value: w.time },
      ]);
      // Its route may have gone while the write was under way: keep nothing for it then.
      if (this.routes.holds(w.sandboxId)) this.written.set(w.sandboxId, w.time);
      return true;
    } catch (e) {
      if (isConflict(e) || isNotFound(e)) return false;
      return e instanceof Error ? e : new Error(String(e));
    }
  }
}
