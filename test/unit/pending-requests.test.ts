import { describe, expect, it, vi } from "vitest";
import { hostKey, PendingGauge } from "../../functions/api/pending-gauge.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import {
  decodeMark,
  encodeMark,
  nextPublishAt,
  PENDING_REQUESTS_PREFIX,
  pendingRequestsOf,
  SERVED_MARK_ANNOTATION,
  servedMark,
  servedMarks,
  shouldPublish,
  staleMarks,
} from "../../lib/pool/pending-requests.ts";

// status.pendingRequests: each host's published count of waiting creates, throttled, and summed.

const NOW = new Date("2026-11-21T12:00:00Z");
const ago = (s: number) => new Date(NOW.getTime() - s * 1000);

describe("pending requests", () => {
  it("publishes at once across 0/>0, else any change of the waiters at most every second", () => {
    expect(shouldPublish(undefined, 0, true, NOW)).toBe(false);
    expect(shouldPublish(undefined, 1, true, NOW)).toBe(true);
    expect(shouldPublish({ count: 5, at: NOW }, 0, true, NOW)).toBe(true);
    expect(shouldPublish({ count: 0, at: NOW }, 1, true, NOW)).toBe(true);
    expect(shouldPublish({ count: 10, at: ago(0.5) }, 20, true, NOW)).toBe(false);
    expect(shouldPublish({ count: 10, at: ago(1) }, 9, true, NOW)).toBe(true);
    expect(shouldPublish({ count: 10, at: ago(30) }, 11, true, NOW)).toBe(true);
    // One waiter served and another come: the count is the same, the waiters are not.
    expect(shouldPublish({ count: 10, at: ago(30) }, 10, true, NOW)).toBe(true);
    expect(shouldPublish({ count: 10, at: ago(30) }, 10, false, NOW)).toBe(false);
  });

  it("sums the fresh marks of every host and ignores stale or garbled ones", () => {
    const pool = {
      metadata: {
        annotations: {
          [`${PENDING_REQUESTS_PREFIX}host-a`]: encodeMark({ count: 3, at: ago(2) }),
          [`${PENDING_REQUESTS_PREFIX}host-b`]: encodeMark({ count: 4, at: ago(59) }),
          [`${PENDING_REQUESTS_PREFIX}host-c`]: encodeMark({ count: 50, at: ago(61) }),
          [`${PENDING_REQUESTS_PREFIX}host-d`]: "lots",
          "other/key": "9 2026-11-21T12:00:00Z",
        },
      },
    } as unknown as SandboxPool;
    expect(pendingRequestsOf(pool, NOW)).toBe(7);
    expect(pendingRequestsOf({ metadata: {} } as SandboxPool, NOW)).toBe(0);
  });

  it("takes the waiters already served (pods claimed with that very mark) off the mark", () => {
    const key = `${PENDING_REQUESTS_PREFIX}host-a`;
    const value = encodeMark({ count: 5, at: ago(1) });
    const pool = { metadata: { name: "p", annotations: { [key]: value } } } as unknown as SandboxPool;
    const claimed = (mark: string, deleting = false) => ({
      metadata: {
        annotations: { [SERVED_MARK_ANNOTATION]: mark },
        ...(deleting ? { deletionTimestamp: NOW.toISOString() } : {}),
      },
    });
    const served = servedMarks([
      claimed(servedMark("p", key, value)),
      claimed(servedMark("p", key, value)),
      claimed(servedMark("p", key, value), true), // being deleted: no longer counts
      claimed(servedMark("p", key, encodeMark({ count: 5, at: ago(2) }))), // an older mark
      claimed(servedMark("other", key, value)), // another pool's mark
      { metadata: {} },
    ]);
    expect(pendingRequestsOf(pool, NOW, served)).toBe(3);
    expect(pendingRequestsOf(pool, NOW)).toBe(5);
    const overServed = new Map([[servedMark("p", key, value), 9]]);
    expect(pendingRequestsOf(pool, NOW, overServed)).toBe(0);
  });

  it("round-trips marks and names hosts with valid annotation keys", () => {
    expect(decodeMark(encodeMark({ count: 2, at: NOW }))).toEqual({ count: 2, at: NOW });
    expect(decodeMark("-1 2026-11-21T12:00:00Z")).toBeUndefined();
    expect(decodeMark("2 soon")).toBeUndefined();
    expect(hostKey("Pod_Host:8443")).toBe(`${PENDING_REQUESTS_PREFIX}pod_host-8443`);
    expect(hostKey("x".repeat(80)).length).toBe(PENDING_REQUESTS_PREFIX.length + 63);
    expect(hostKey("!!!")).toBe(`${PENDING_REQUESTS_PREFIX}host`);
  });

  it("arms the next publish only when it can happen: a change, or a heartbeat above 0", () => {
    const last = { count: 10, at: NOW };
    expect(nextPublishAt(last, 12, true)).toEqual(new Date(NOW.getTime() + 1000));
    expect(nextPublishAt(last, 9, true)).toEqual(new Date(NOW.getTime() + 1000));
    expect(nextPublishAt(last, 10, true)).toEqual(new Date(NOW.getTime() + 1000));
    // Unchanged waiters wait for the heartbeat (no timer firing every millisecond in between).
    expect(nextPublishAt(last, 10, false)).toEqual(new Date(NOW.getTime() + 20_000));
    expect(nextPublishAt({ count: 0, at: NOW }, 0, false)).toBeUndefined();
  });

  it("finds the marks no host rewrote for a minute, and garbled ones", () => {
    const pool = {
      metadata: {
        annotations: {
          [`${PENDING_REQUESTS_PREFIX}fresh`]: encodeMark({ count: 1, at: ago(59) }),
          [`${PENDING_REQUESTS_PREFIX}gone`]: encodeMark({ count: 1, at: ago(61) }),
          [`${PENDING_REQUESTS_PREFIX}junk`]: "x",
          other: "1 2020-01-01T00:00:00Z",
        },
      },
    } as unknown as SandboxPool;
    expect(staleMarks(pool, NOW).sort()).toEqual([
      `${PENDING_REQUESTS_PREFIX}gone`,
      `${PENDING_REQUESTS_PREFIX}junk`,
    ]);
  });
});

/** recordingGauge is host-a's gauge over a client that records the mark each write sets (null: removed). */
function recordingGauge() {
  const writes: (string | null)[] = [];
  const kube = {
    setPoolAnnotations: async (_ns: string, _name: string, a: Record<string, string | null>) => {
      writes.push(Object.values(a)[0] ?? null);
      return {} as SandboxPool;
    },
  };
  const gauge = new PendingGauge(
    { kube: kube as never, now: () => new Date(), log: { debug() {}, info() {}, warn() {}, error() {} } },
    "host-a",
  );
  return { writes, gauge };
}

describe("PendingGauge", () => {
  it("publishes at once, holds back changes for a second, heartbeats, and removes its mark at 0", async () => {
    vi.useFakeTimers({ now: NOW });
    try {
      const { writes, gauge } = recordingGauge();
      const pool = { metadata: { namespace: "ns", name: "p" } } as SandboxPool;
      const tickets = Array.from({ length: 10 }, () => gauge.enter(pool));
      await gauge.flushed();
      expect(writes).toEqual(["1 2026-11-21T12:00:00.000Z"]);
      // A waiter claiming now names the mark that counted it; the nine that came after it are in
      // no mark yet, so they name none.
      const first = servedMark("p", hostKey("host-a"), "1 2026-11-21T12:00:00.000Z");
      expect(gauge.servedMark(pool, tickets[0] ?? 0)).toBe(first);
      expect(gauge.servedMark(pool, tickets[9] ?? 0)).toBeUndefined();
      await vi.advanceTimersByTimeAsync(999);
      expect(writes).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(1);
      await gauge.flushed();
      expect(writes.at(-1)).toBe("10 2026-11-21T12:00:01.000Z");
      const second = servedMark("p", hostKey("host-a"), "10 2026-11-21T12:00:01.000Z");
      expect(tickets.map((t) => gauge.servedMark(pool, t))).toEqual(Array(10).fill(second));
      // A steady count is rewritten by the heartbeat only.
      await vi.advanceTimersByTimeAsync(19_000);
      expect(writes).toHaveLength(2);
      expect(vi.getTimerCount()).toBe(1);
      await vi.advanceTimersByTimeAsync(1000);
      await gauge.flushed();
      expect(writes.at(-1)).toBe("10 2026-11-21T12:00:21.000Z");
      gauge.enter(pool);
      await vi.advanceTimersByTimeAsync(1000);
      await gauge.flushed();
      expect(writes.at(-1)).toBe("11 2026-11-21T12:00:22.000Z");
      for (let i = 0; i < 11; i++) gauge.leave(pool);
      await gauge.flushed();
      expect(writes.at(-1)).toBeNull();
      expect(gauge.servedMark(pool, 1)).toBeUndefined();
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("removes its marks when closed although waiters still count, and publishes nothing after", async () => {
    vi.useFakeTimers({ now: NOW });
    try {
      const { writes, gauge } = recordingGauge();
      const pool = { metadata: { namespace: "ns", name: "p" } } as SandboxPool;
      gauge.enter(pool);
      gauge.enter(pool);
      await gauge.flushed();
      expect(writes).toEqual(["1 2026-11-21T12:00:00.000Z"]);
      gauge.close();
      await gauge.flushed();
      expect(writes).toEqual(["1 2026-11-21T12:00:00.000Z", null]);
      expect(vi.getTimerCount()).toBe(0);
      // The waiters stopped by the shutdown leave afterwards; one more comes: no write.
      gauge.leave(pool);
      gauge.leave(pool);
      gauge.enter(pool);
      await vi.advanceTimersByTimeAsync(30_000);
      await gauge.flushed();
      expect(writes).toHaveLength(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it("republishes when a waiter was served and another came, although the count is the same", async () => {
    vi.useFakeTimers({ now: NOW });
    try {
      const { writes, gauge } = recordingGauge();
      const pool = { metadata: { namespace: "ns", name: "p" } } as SandboxPool;
      gauge.enter(pool);
      const w2 = gauge.enter(pool);
      await vi.advanceTimersByTimeAsync(1000);
      await gauge.flushed();
      expect(writes).toEqual(["1 2026-11-21T12:00:00.000Z", "2 2026-11-21T12:00:01.000Z"]);
      // w1 is served and leaves, w3 comes: still two wait, but not the two the mark counted.
      gauge.leave(pool);
      const w3 = gauge.enter(pool);
      expect(gauge.servedMark(pool, w3)).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1000);
      await gauge.flushed();
      expect(writes.at(-1)).toBe("2 2026-11-21T12:00:02.000Z");
      const now = servedMark("p", hostKey("host-a"), "2 2026-11-21T12:00:02.000Z");
      expect([gauge.servedMark(pool, w2), gauge.servedMark(pool, w3)]).toEqual([now, now]);
    } finally {
      vi.useRealTimers();
    }
  });
});
