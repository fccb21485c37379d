import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import {
  encodeMark,
  HEARTBEAT_MS,
  nextPublishAt,
  PENDING_REQUESTS_PREFIX,
  type PendingMark,
  servedMark,
  shouldPublish,
} from "../../lib/pool/pending-requests.ts";
import type { HostDeps } from "../host-deps.ts";

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
 * once when it crosses 0/>0, else any change at most once a second; a held-back change is
 * published when the interval ends, and a steady count is rewritten every 20 s so it stays fresh.
 * At 0 the annotation is removed (a merge patch: other keys are never touched). The counts mirror
 * requests open in this process, never a source of truth: a crash loses only waiters that are
 * gone too, and update-status removes a mark that stopped being rewritten.
 */
export class PendingGauge {
  /** pools: per pool, its waiters now, whether they changed since the last publish, what was published. */
  private readonly pools = new Map<
    string,
    { pool: SandboxPool; count: number; changed: boolean; published?: PendingMark; seq: number }
  >();
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly chains = new Map<string, Promise<void>>();
  private readonly key: string;
  private closed = false;
  private readonly deps: Pick<HostDeps, "kube" | "now" | "log">;

  constructor(deps: Pick<HostDeps, "kube" | "now" | "log">, instance: string) {
    this.deps = deps;
    this.key = hostKey(instance);
  }

  /**
   * enter counts one more waiter on the pool; call leave when it stops waiting. The ticket it
   * returns says which marks count this waiter (servedMark): those published after it came.
   */
  enter(pool: SandboxPool): number {
    const state = this.change(pool, 1);
    // The publish this call may just have made counts the waiter too.
    return state.changed ? state.seq + 1 : state.seq;
  }

  leave(pool: SandboxPool): void {
    this.change(pool, -1);
  }

  /**
   * servedMark names the mark this host last published on the pool (servedMark), when it counts
   * the waiter holding `ticket`: a waiter that claims a pod stamps it on the pod, so the autoscaler
   * no longer counts it as waiting. Undefined when no published mark counts the waiter yet.
   */
  servedMark(pool: SandboxPool, ticket: number): string | undefined {
    const state = this.pools.get(`${pool.metadata?.namespace}/${pool.metadata?.name}`);
    const mark = state?.published;
    return mark && mark.count > 0 && state.seq >= ticket
      ? servedMark(pool.metadata?.name ?? "", this.key, encodeMark(mark))
      : undefined;
  }

  /**
   * close removes this host's mark from every pool it still counts waiters on, and publishes
   * nothing after (a stopping host serves none of them: ADR 0029); flushed() resolves once the
   * removals are written. A removal that fails leaves a mark that update-status drops once stale.
   */
  close(): void {
    this.closed = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const [id, state] of this.pools) {
      const zero = { count: 0, at: this.deps.now() };
      const next = (this.chains.get(id) ?? Promise.resolve()).then(() => this.write(state.pool, zero));
      this.chains.set(id, next);
    }
    this.pools.clear();
  }

  /** flushed resolves once every publish started so far is written (shutdown, waitUntil). */
  async flushed(): Promise<void> {
    await Promise.all(this.chains.values());
  }

  private change(pool: SandboxPool, by: number) {
    if (this.closed) return { pool, count: 0, changed: false, seq: 0 };
    const id = `${pool.metadata?.namespace}/${pool.metadata?.name}`;
    const state = this.pools.get(id) ?? { pool, count: 0, changed: false, seq: 0 };
    state.count = Math.max(0, state.count + by);
    state.changed = true;
    this.pools.set(id, state);
    this.schedule(id);
    return state;
  }

  /** schedule publishes the pool's count now when the throttle allows, and arms the next check. */
  private schedule(id: string): void {
    const state = this.pools.get(id);
    if (!state) return;
    const now = this.deps.now();
    const last = state.published;
    const heartbeat =
      last !== undefined && state.count > 0 && now.getTime() - last.at.getTime() >= HEARTBEAT_MS;
    if (shouldPublish(last, state.count, state.changed, now) || heartbeat) {
      const mark = { count: state.count, at: now };
      state.published = mark;
      state.changed = false;
      state.seq++;
      // At 0 nobody waits: the next waiter starts from a clean state (and tickets from 1).
      if (mark.count === 0) this.pools.delete(id);
      const next = (this.chains.get(id) ?? Promise.resolve()).then(() => this.write(state.pool, mark));
      this.chains.set(id, next);
    }
    this.arm(id);
  }

  /** arm sets the one timer per pool for the next time the throttle may publish (or none). */
  private arm(id: string): void {
    clearTimeout(this.timers.get(id));
    this.timers.delete(id);
    const state = this.pools.get(id);
    const at = state?.published ? nextPublishAt(state.published, state.count, state.changed) : undefined;
    if (!at) return;
    const timer = setTimeout(
      () => {
        this.timers.delete(id);
        this.schedule(id);
      },
      Math.max(1, at.getTime() - this.deps.now().getTime()),
    );
    // A Node timer must not keep a stopping process alive (Workers timers have no unref).
    (timer as { unref?: () => void }).unref?.();
    this.timers.set(id, timer);
  }

  private async write(pool: SandboxPool, mark: PendingMark): Promise<void> {
    await this.deps.kube
      .setPoolAnnotations(pool.metadata?.namespace ?? "", pool.metadata?.name ?? "", {
        [this.key]: mark.count === 0 ? null : encodeMark(mark),
      })
      .catch((e: unknown) =>
        this.deps.log.debug({ pool: pool.metadata?.name, err: String(e) }, "pending requests not published"),
      );
  }
}
