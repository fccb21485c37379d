import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";
import { escapePointer } from "../../lib/kube/json-patch.ts";
import {
  encodeMark,
  FLUSH_INTERVAL_MS,
  PENDING_REQUESTS_PREFIX,
  type PendingMark,
  shouldPublish,
} from "../../lib/pool/pending-requests.ts";
import type { StepDeps } from "../deps.ts";

/** hostKey turns a host's instance name into its annotation key (name part: ≤ 63 of [a-z0-9-_.]). */
export function hostKey(instance: string): string {
  const name = instance
    .toLowerCase()
    .replace(/[^a-z0-9-_.]/g, "-")
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, "")
    .slice(0, 63);
  return `${PENDING_REQUESTS_PREFIX}${name || "host"}`;
}

/**
 * PendingGauge counts this host's creates waiting for an idle pod, per pool, and publishes the
 * count in the pool's annotation for this host (see lib/pool/pending-requests.ts), throttled: at
 * once when it crosses 0/>0, else at most every 3 s and only for a 20 % move; a deferred move is
 * published by a timer. At 0 the annotation is removed, so keys exist only while requests wait.
 * The counts are a mirror of requests open in this process, never a source of truth: losing them
 * (a crash) loses only waiters that are gone too, and a stale mark ages out of the sum in 60 s.
 */
export class PendingGauge {
  private readonly waiting = new Map<string, { pool: SandboxPool; count: number }>();
  private readonly published = new Map<string, PendingMark>();
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly chains = new Map<string, Promise<void>>();
  private readonly key: string;
  private readonly deps: Pick<StepDeps, "kube" | "now" | "log">;

  constructor(deps: Pick<StepDeps, "kube" | "now" | "log">, instance: string) {
    this.deps = deps;
    this.key = hostKey(instance);
  }

  /** enter counts one more waiter on the pool; call leave when it stops waiting. */
  enter(pool: SandboxPool): void {
    this.change(pool, 1);
  }

  leave(pool: SandboxPool): void {
    this.change(pool, -1);
  }

  /** flushed resolves once every publish started so far is written (tests and shutdown). */
  async flushed(): Promise<void> {
    await Promise.all(this.chains.values());
  }

  private change(pool: SandboxPool, by: number): void {
    const id = `${pool.metadata?.namespace}/${pool.metadata?.name}`;
    const entry = this.waiting.get(id) ?? { pool, count: 0 };
    entry.count = Math.max(0, entry.count + by);
    this.waiting.set(id, entry);
    this.schedule(id);
  }

  /** schedule publishes the pool's count now when the throttle allows, else when it will. */
  private schedule(id: string): void {
    const entry = this.waiting.get(id);
    if (!entry) return;
    const now = this.deps.now();
    const last = this.published.get(id);
    if (!shouldPublish(last, entry.count, now)) {
      if (last && entry.count !== last.count && !this.timers.has(id)) {
        const wait = Math.max(0, last.at.getTime() + FLUSH_INTERVAL_MS - now.getTime());
        this.timers.set(
          id,
          setTimeout(() => {
            this.timers.delete(id);
            this.schedule(id);
          }, wait),
        );
      }
      return;
    }
    const mark = { count: entry.count, at: now };
    this.published.set(id, mark);
    if (mark.count === 0) this.waiting.delete(id);
    const prev = this.chains.get(id) ?? Promise.resolve();
    const next = prev.then(() => this.write(entry.pool, mark));
    this.chains.set(id, next);
  }

  private async write(pool: SandboxPool, mark: PendingMark): Promise<void> {
    const path = `/metadata/annotations/${escapePointer(this.key)}`;
    const ops =
      mark.count === 0
        ? [{ op: "remove" as const, path }]
        : [
            ...(pool.metadata?.annotations
              ? []
              : [{ op: "add" as const, path: "/metadata/annotations", value: {} }]),
            { op: "add" as const, path, value: encodeMark(mark) },
          ];
    await this.deps.kube
      .patchPool(pool.metadata?.namespace ?? "", pool.metadata?.name ?? "", ops)
      .catch((e: unknown) =>
        this.deps.log.debug({ pool: pool.metadata?.name, err: String(e) }, "pending requests not published"),
      );
  }
}
