// One autoscaling decision for one Env group, from what its members' pools and Pods show at `now`:
// the replicas each member should have and each pool's autoscaler bookkeeping. Pure: the step
// that calls it reads, decides and writes, so a repeated or late run decides from what it reads.
import type { PoolAutoScalingStatus } from "../crd/autoscaling.ts";
import { jsonEqual } from "../util/deep-equal.ts";
import { parseTime, rfc3339 } from "../util/time.ts";
import {
  type DecideOptions,
  type GroupDecision,
  type GroupSnapshot,
  SCALE_REASON,
  type ScaleChange,
  type ScaleReason,
} from "./group-decision.ts";
import type { GroupStamp } from "./group-stamps.ts";
import type { MemberLoad } from "./member-load.ts";
import {
  byScaleUpOrder,
  effectiveScaleDownPriority,
  type GroupPolicies,
  groupPolicies,
  growth,
} from "./policies.ts";

const seconds = (from: Date, to: Date) => (to.getTime() - from.getTime()) / 1000;

/** latest is the latest of some stored times, undefined when none is readable. */
function latest(values: readonly unknown[]): Date | undefined {
  const times = values.flatMap((t) => parseTime(t) ?? []);
  return times.length ? new Date(Math.max(...times.map((t) => t.getTime()))) : undefined;
}

/** Run is one decision's working state: targets and bookkeeping, changed in place. */
class Run {
  readonly target: Map<string, number>;
  readonly book: Map<string, PoolAutoScalingStatus>;
  readonly changes: ScaleChange[] = [];
  readonly nowText: string;

  readonly p: GroupPolicies;
  readonly members: readonly MemberLoad[];
  readonly now: Date;
  /** read is the group's stamp as read (the gates); stamp is the one this run writes. */
  readonly read: GroupStamp;
  readonly stamp: GroupStamp;

  constructor(p: GroupPolicies, members: readonly MemberLoad[], stamp: GroupStamp, now: Date) {
    this.p = p;
    this.members = members;
    this.now = now;
    this.read = stamp;
    this.stamp = { ...stamp };
    this.target = new Map(members.map((m) => [m.name, m.desired]));
    this.book = new Map(this.live.map((m) => [m.name, { ...m.autoscaling }]));
    this.nowText = rfc3339(now);
  }

  get live(): MemberLoad[] {
    return this.members.filter((m) => m.pool !== undefined);
  }

  get total(): number {
    return [...this.target.values()].reduce((a, b) => a + b, 0);
  }

  of(m: MemberLoad): number {
    return this.target.get(m.name) ?? m.desired;
  }

  move(m: MemberLoad, to: number, reason: ScaleReason): void {
    const from = this.of(m);
    if (to === from) return;
    this.target.set(m.name, to);
    const book = this.book.get(m.name);
    if (book && to > from) book.lastScaleUpTime = this.nowText;
    if (book && to < from) book.lastScaleDownTime = this.nowText;
    if (to > from) this.stamp.lastScaleUpTime = this.nowText;
    if (to < from) this.stamp.lastScaleDownTime = this.nowText;
    const earlier = this.changes.find((c) => c.member === m.name);
    if (earlier) Object.assign(earlier, { to, reason, direction: to > earlier.from ? "up" : "down" });
    else this.changes.push({ member: m.name, direction: to > from ? "up" : "down", reason, from, to });
  }

  /** saturated: the member's last probe saturated it and saturationCooldownSeconds has not passed. */
  saturated(m: MemberLoad): boolean {
    const book = m.autoscaling;
    const result = book?.lastScaleUpAttemptResult;
    const at = parseTime(book?.lastScaleUpAttemptTime);
    if (!at || !result || result === "Enough") return false;
    return seconds(at, this.now) < this.p.scaleUp.saturationCooldownSeconds;
  }

  /**
   * ordered is the member's replicas not yet created that will be: none when its pool cannot
   * create Pods (its probe is not Enough: creates refused, Pods unschedulable) or it is saturated.
   * Counting those would hide the waiters they were meant for, and then no scale-up would be
   * attempted, so the member would never be found saturated and its share never passed on.
   */
  ordered(m: MemberLoad): number {
    if (m.probe.result !== "Enough" || this.saturated(m)) return 0;
    return Math.max(0, this.of(m) - m.existing);
  }

  /** unmet is the member's waiting creates nothing already there or ordered will serve. */
  unmet(m: MemberLoad): number {
    return Math.max(0, m.pending - m.idle.length - m.stopping - this.ordered(m));
  }

  /**
   * demand is the group's waiting creates that nothing there or ordered will serve, counted over
   * the whole group: a waiting create watches every member's Pods (functions/api/wait-for-idle.ts),
   * so a Pod on its way in any member serves it, and growth sent to another member than the one
   * a create registered on (that one saturated) is not asked for again.
   */
  demand(): number {
    const supply = this.live.reduce((sum, m) => sum + m.idle.length + m.stopping + this.ordered(m), 0);
    return Math.max(0, this.live.reduce((sum, m) => sum + m.pending, 0) - supply);
  }

  /**
   * grow adds up to `amount` replicas: first to the members whose creates wait (up to their
   * unmet demand), then by scale-up order, each member filled to its maxReplicas before the next.
   * A member is probed once before it grows; a saturated one is neither probed nor grown.
   */
  grow(amount: number, reason: ScaleReason): void {
    const ceiling = this.p.maxReplicas;
    let room = ceiling === undefined ? amount : Math.min(amount, ceiling - this.total);
    if (room <= 0) return;
    const probed = new Map<string, boolean>();
    const admits = (m: MemberLoad): boolean => {
      const known = probed.get(m.name);
      if (known !== undefined) return known;
      const book = this.book.get(m.name);
      if (!book || this.saturated(m)) return false;
      book.lastScaleUpAttemptTime = this.nowText;
      book.lastScaleUpAttemptResult = m.probe.result;
      if (m.probe.result === "Enough") delete book.scaleUpErrorMessage;
      else book.scaleUpErrorMessage = m.probe.message;
      probed.set(m.name, m.probe.result === "Enough");
      return m.probe.result === "Enough";
    };
    const order = [...this.live].sort(byScaleUpOrder);
    const waiting = order.filter((m) => this.unmet(m) > 0);
    for (const [members, share] of [
      [waiting, (m: MemberLoad) => this.unmet(m)],
      [order, () => Number.POSITIVE_INFINITY],
    ] as const) {
      for (const m of members) {
        if (room <= 0) return;
        const headroom = (m.config?.maxReplicas ?? Number.POSITIVE_INFINITY) - this.of(m);
        const add = Math.min(room, share(m), headroom);
        if (add <= 0 || !admits(m)) continue;
        this.move(m, this.of(m) + add, reason);
        room -= add;
      }
    }
  }

  /**
   * shrink removes up to `amount` replicas, highest scale-down priority first (ties: the member
   * with the oldest idle Pod, then name), never below a member's minReplicas. With `removable`,
   * a member gives up at most that many (its Pods idle long enough); without, any replicas.
   */
  shrink(amount: number, reason: ScaleReason, removable?: (m: MemberLoad) => number): void {
    let left = amount;
    const oldest = (m: MemberLoad) =>
      Math.min(...m.idle.map((pod) => pod.since?.getTime() ?? Number.POSITIVE_INFINITY));
    const order = [...this.live].sort(
      (a, b) =>
        effectiveScaleDownPriority(b.config) - effectiveScaleDownPriority(a.config) ||
        oldest(a) - oldest(b) ||
        (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    );
    for (const m of order) {
      if (left <= 0) return;
      const floor = m.config?.minReplicas ?? 0;
      const take = Math.min(left, this.of(m) - floor, removable ? removable(m) : left);
      if (take <= 0) continue;
      this.move(m, this.of(m) - take, reason);
      left -= take;
    }
  }

  /** idleCandidates: the member's Pods idle for idleTimeoutSeconds not already on their way out. */
  idleCandidates(m: MemberLoad): number {
    const timeout = this.p.scaleDown.idleTimeoutSeconds;
    const old = m.idle.filter((pod) => pod.since && seconds(pod.since, this.now) >= timeout).length;
    return Math.max(0, old - Math.max(0, m.existing - this.of(m)));
  }

  /** proactiveDue: no idle Pod group-wide for idleThresholdSeconds, creates recent, cooled down. */
  proactiveDue(): boolean {
    const { idleThresholdSeconds, idleZeroQuietWindowSeconds } = this.p.scaleUp;
    const live = this.live;
    if (idleThresholdSeconds === 0 || live.length === 0) return false;
    if (live.some((m) => m.idle.length > 0 || this.ordered(m) > 0)) return false;
    const zeroSince = latest(live.map((m) => this.book.get(m.name)?.idleZeroSince));
    if (!zeroSince || seconds(zeroSince, this.now) < idleThresholdSeconds) return false;
    const lastCreate = latest(live.map((m) => m.lastCreate));
    if (
      idleZeroQuietWindowSeconds > 0 &&
      (!lastCreate || seconds(lastCreate, this.now) > idleZeroQuietWindowSeconds)
    )
      return false;
    return this.cooledDown();
  }

  /** cooledDown: cooldownSeconds have passed since the group's last scale-up (Env or pools). */
  cooledDown(): boolean {
    const lastUp = latest([
      this.read.lastScaleUpTime,
      ...this.live.map((m) => m.autoscaling?.lastScaleUpTime),
    ]);
    return !lastUp || seconds(lastUp, this.now) >= this.p.scaleUp.cooldownSeconds;
  }

  /** stable: stabilizationSeconds have passed since the group's last scale-down (Env or pools). */
  stable(): boolean {
    const lastDown = latest([
      this.read.lastScaleDownTime,
      ...this.live.map((m) => m.autoscaling?.lastScaleDownTime),
    ]);
    return !lastDown || seconds(lastDown, this.now) >= this.p.scaleDown.stabilizationSeconds;
  }
}

/**
 * decide runs the autoscaler over one group. A disabled group gets nothing. Otherwise, in order:
 *
 * - bookkeeping: idleZeroSince starts when a pool has no idle Pod and is cleared when it has one;
 * - bounds: each member is brought within its own min/max, then the group's sum within the
 *   group's min/max (these bypass the cooldown, stabilization and idle gates; a saturated member
 *   is still not grown, its share goes to the next);
 * - reactive scale-up, when creates wait that no idle, resetting or ordered Pod will serve
 *   (counted after the bounds, so a group raised to its minimum also grows for its waiters): the
 *   larger of the mode's growth and that demand; within cooldownSeconds of the last scale-up just
 *   that demand (the waiters never wait for a cooldown, but the mode's headroom is added at most
 *   once per cooldown; ADR 0034 measured this against cooldownMode "strict", which adds nothing
 *   within the cooldown); the quiet window does not apply;
 * - proactive scale-up (the mode's growth), when the group had no idle Pod for
 *   idleThresholdSeconds, nothing is on its way, a create was seen within
 *   idleZeroQuietWindowSeconds, and cooldownSeconds passed since the last scale-up;
 * - scale-down, when nobody waits and stabilizationSeconds passed since the last one: by the
 *   Pods idle for idleTimeoutSeconds, never below the members' and the group's minimums.
 *
 * Every scale-up is an attempt recorded on the pool it probed (time, result, message); a pool
 * whose probe says Insufficient or Failed is saturated for saturationCooldownSeconds: not probed,
 * not grown, and its share goes to the next member.
 */
export function decide(snapshot: GroupSnapshot, now: Date, options: DecideOptions = {}): GroupDecision {
  const p = groupPolicies(snapshot.group);
  const decision: GroupDecision = { group: p.name, replicas: new Map(), autoscaling: new Map(), changes: [] };
  if (!p.enabled) return decision;
  const run = new Run(p, snapshot.members, snapshot.stamp ?? {}, now);
  for (const m of run.live) {
    const book = run.book.get(m.name);
    if (!book) continue;
    if (m.idle.length > 0) delete book.idleZeroSince;
    else book.idleZeroSince ??= run.nowText;
  }
  for (const m of run.live) {
    const { minReplicas = 0, maxReplicas } = m.config ?? {};
    if (run.of(m) < minReplicas) run.move(m, minReplicas, SCALE_REASON.BELOW_MIN);
    if (maxReplicas !== undefined && run.of(m) > maxReplicas)
      run.move(m, maxReplicas, SCALE_REASON.ABOVE_MAX);
  }
  const bounded = run.total < p.minReplicas || (p.maxReplicas !== undefined && run.total > p.maxReplicas);
  if (run.total < p.minReplicas) run.grow(p.minReplicas - run.total, SCALE_REASON.BELOW_MIN);
  else if (p.maxReplicas !== undefined && run.total > p.maxReplicas)
    run.shrink(run.total - p.maxReplicas, SCALE_REASON.ABOVE_MAX);
  // Waiting creates are counted after the group's bounds: pods the minimum just ordered serve
  // them too, and what they leave unmet is grown in the same run, not the next.
  const demand = run.demand();
  if (demand > 0) {
    if (run.cooledDown())
      run.grow(Math.max(growth(p.scaleUp.mode, run.total, p.maxReplicas), demand), SCALE_REASON.REACTIVE);
    else if (options.cooldownMode !== "strict") run.grow(demand, SCALE_REASON.REACTIVE);
  }
  // A group just brought within its bounds has taken this run's step.
  else if (!bounded && run.proactiveDue())
    run.grow(growth(p.scaleUp.mode, run.total, p.maxReplicas), SCALE_REASON.IDLE_ZERO);
  else if (!bounded && run.live.every((m) => m.pending === 0) && run.stable())
    run.shrink(run.total - p.minReplicas, SCALE_REASON.IDLE_TIMEOUT, (m) => run.idleCandidates(m));

  for (const m of snapshot.members) {
    const to = run.of(m);
    if (to !== m.desired) decision.replicas.set(m.name, to);
  }
  for (const m of run.live) {
    const next = run.book.get(m.name) ?? {};
    const { observedGeneration: _, ...before } = m.autoscaling ?? {};
    const { observedGeneration: __, ...after } = next;
    if (m.autoscaling !== undefined && jsonEqual(before, after)) continue;
    const generation = m.pool?.metadata?.generation;
    decision.autoscaling.set(m.name, {
      ...after,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    });
  }
  decision.changes = run.changes;
  if (run.changes.length > 0) decision.stamp = run.stamp;
  return decision;
}
