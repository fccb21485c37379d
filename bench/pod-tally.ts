import { KubeConfig, type V1Pod } from "@kubernetes/client-node";
import type { ClusterState } from "../infra/cluster/state.ts";
import { SANDBOX_PHASE_LABEL } from "../lib/crd/keys.ts";
import { PENDING_REQUESTS_PREFIX } from "../lib/pool/pending-requests.ts";
import { type Following, follow } from "./follow.ts";

interface Seen {
  phase: string | undefined;
  /** since: when the watch first saw the pod in this phase/readiness (performance.now()). */
  since: number;
  ready: boolean;
  terminating: boolean;
  /** addedAt: when the watch first saw the pod (performance.now()). */
  addedAt: number;
}

/**
 * PodTally watches a benchmark's pool pods and pools and keeps, from the watch events alone (no
 * polling): the current counts, idle and busy pod-seconds since `mark`, when a create first had
 * to wait (a pending-requests mark on a pool) and when the first pod created after that became
 * idle and Ready.
 */
export class PodTally {
  private readonly pods = new Map<string, Seen>();
  private readonly followings: Following[] = [];
  private from: number | undefined;
  private last = performance.now();
  private idleSeconds = 0;
  private busySeconds = 0;
  private unmetAt: number | undefined;
  private newIdleAt: number | undefined;
  /** stays: how long pods stayed in each state before leaving it (ms), since mark. */
  private readonly stays = new Map<string, number[]>();

  static async start(state: ClusterState, ns: string, selector: string, pools: readonly string[]) {
    const tally = new PodTally();
    const kc = new KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    const names = new Set(pools);
    const onPool = (pool: { metadata?: { name?: string; annotations?: Record<string, string> } }) => {
      if (!names.has(pool.metadata?.name ?? "")) return;
      const keys = Object.keys(pool.metadata?.annotations ?? {});
      const marked = keys.some((k) => k.startsWith(PENDING_REQUESTS_PREFIX));
      if (marked && tally.from !== undefined && tally.unmetAt === undefined)
        tally.unmetAt = performance.now();
    };
    const followings = await Promise.all([
      follow(
        kc,
        `/api/v1/namespaces/${ns}/pods`,
        selector,
        (pods: V1Pod[]) => {
          const before = tally.pods;
          tally.advance(performance.now());
          const known = new Map(before);
          before.clear();
          for (const pod of pods) {
            const name = pod.metadata?.name ?? "";
            const seen = known.get(name);
            if (seen) before.set(name, seen);
            tally.onPod("MODIFIED", pod);
          }
        },
        (type, pod: V1Pod) => tally.onPod(type, pod),
      ),
      follow(
        kc,
        `/apis/agents.navix.sh/v1alpha1/namespaces/${ns}/sandboxpools`,
        undefined,
        (items: object[]) => {
          for (const pool of items) onPool(pool);
        },
        (_type, pool: object) => onPool(pool),
      ),
    ]);
    tally.followings.push(...followings);
    return tally;
  }

  /** mark starts the pod-second counts (the load's start). */
  mark(at: number): void {
    this.advance(at);
    this.from = at;
    this.idleSeconds = 0;
    this.busySeconds = 0;
  }

  private advance(now: number): void {
    if (this.from !== undefined) {
      const dt = (now - this.last) / 1000;
      const c = this.counts();
      this.idleSeconds += c.idle * dt;
      this.busySeconds += c.busy * dt;
    }
    this.last = now;
  }

  private onPod(type: string, pod: V1Pod): void {
    const now = performance.now();
    this.advance(now);
    const name = pod.metadata?.name ?? "";
    if (type === "DELETED") {
      this.pods.delete(name);
      return;
    }
    const before = this.pods.get(name);
    const phase = pod.metadata?.labels?.[SANDBOX_PHASE_LABEL];
    const ready = pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
    const state = (p: string | undefined, r: boolean) => (p === "idle" ? `idle-${r}` : (p ?? ""));
    const changed = !before || state(before.phase, before.ready) !== state(phase, ready);
    if (before && changed && this.from !== undefined && now >= this.from) {
      const key = state(before.phase, before.ready);
      const list = this.stays.get(key) ?? [];
      list.push(now - before.since);
      this.stays.set(key, list);
    }
    const seen: Seen = {
      phase,
      ready,
      since: changed ? now : (before?.since ?? now),
      terminating: Boolean(pod.metadata?.deletionTimestamp),
      addedAt: before?.addedAt ?? now,
    };
    this.pods.set(name, seen);
    const fresh = this.unmetAt !== undefined && seen.addedAt >= this.unmetAt;
    if (fresh && this.newIdleAt === undefined && seen.phase === "idle" && seen.ready) this.newIdleAt = now;
  }

  /** phases counts the live pods per phase label (idle split by readiness), for progress lines. */
  phases(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const p of this.pods.values()) {
      if (p.terminating) {
        out.terminating = (out.terminating ?? 0) + 1;
        continue;
      }
      const key = p.phase === "idle" ? (p.ready ? "idle" : "idle-unready") : (p.phase ?? "none");
      out[key] = (out[key] ?? 0) + 1;
    }
    return out;
  }

  /** counts: all pods, live ones (not terminating), idle (any readiness), idle and Ready, busy. */
  counts() {
    let all = 0;
    let live = 0;
    let idle = 0;
    let idleReady = 0;
    let busy = 0;
    for (const p of this.pods.values()) {
      all++;
      if (p.terminating) continue;
      live++;
      if (p.phase === "idle") {
        idle++;
        if (p.ready) idleReady++;
      } else if (p.phase === "starting" || p.phase === "running" || p.phase === "stopping") busy++;
    }
    return { all, live, idle, idleReady, busy };
  }

  /** podSeconds: idle and busy pod-seconds between mark and `until`. */
  podSeconds(until: number): { idle: number; busy: number } {
    // Events after `until` have already been counted in: the figures would run past it.
    if (until < this.last) throw new Error("podSeconds: the tally already counts past `until`");
    this.advance(until);
    return { idle: this.idleSeconds, busy: this.busySeconds };
  }

  /** stayTimes: the median time (ms) pods stayed in each state they left, and how many left it. */
  stayTimes(): Record<string, { p50: number; n: number }> {
    const out: Record<string, { p50: number; n: number }> = {};
    for (const [k, xs] of this.stays) {
      const sorted = [...xs].sort((a, b) => a - b);
      out[k] = { p50: Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0), n: xs.length };
    }
    return out;
  }

  /** wake: ms from the first waiting create's mark to the first new pod idle and Ready. */
  wake(): number | undefined {
    return this.unmetAt !== undefined && this.newIdleAt !== undefined
      ? this.newIdleAt - this.unmetAt
      : undefined;
  }

  stop(): void {
    for (const f of this.followings) f.stop();
  }
}
