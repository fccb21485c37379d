import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../integration/support/kube.ts";
import { expectSettled, type Replicas, startReplicas, troubles } from "./support/replicas.ts";

// Three hosts (real processes, one control plane, one PostgreSQL history, the apiserver's
// callbacks through a stand-in Service) take a storm of 1,000 creates spread over them against
// 800 idle pods: exactly 800 sandboxes, each on a pod of its own, and 200 clean "no idle sandbox"
// 503s; no pod ever carries two sandbox ids. Released, each of the 800 is recorded exactly once,
// in the table and through every host's history API.

let r: Replicas;
const NS = "faults";
const SIZE = 800;
const POOL = { namespace: NS, name: "storm", size: SIZE, idleMs: 300_000 };
const CREATES = 1000;
/** IN_FLIGHT bounds the storm's concurrent requests (over the three hosts). */
const IN_FLIGHT = 60;

/** Created is a create's answer: status, body, the Retry-After header, the host asked, and when (ms since the storm began). */
type Created = { status: number; body: string; retryAfter: unknown; host: string; sent: number; ms: number };
const created: Created[] = [];

beforeAll(async () => {
  r = await startReplicas(`faults-${process.pid}-storm`, {}, POOL);
}, 420_000);
afterAll(async () => {
  await r?.close();
});

/** inBatches runs job(i) for i < n, at most `width` at once, and answers the results in order. */
async function inBatches<T>(n: number, width: number, job: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) out[i] = await job(i);
  };
  await Promise.all(Array.from({ length: width }, worker));
  return out;
}

const hostOf = (i: number) => r.hosts[i % r.hosts.length]?.base ?? "";
const body = (x: Created) => JSON.parse(x.body) as Record<string, unknown>;
const served = () =>
  created.filter((x) => x.status === 201).map((x) => body(x) as { sandboxId: string; pod: string });

describe("three hosts, one PostgreSQL history", () => {
  it("a storm of 1,000 creates against 800 idle pods: 800 sandboxes on 800 pods, 200 clean 503s", async () => {
    const { c, hosts, claims } = r;
    const t0 = Date.now();
    created.push(
      ...(await inBatches(CREATES, IN_FLIGHT, async (i) => {
        const host = hostOf(i);
        const sent = Date.now();
        const res = await c.api("POST", "/sandboxes", { pool: `${NS}/${POOL.name}` }, 60_000, host);
        const ms = Date.now() - sent;
        return {
          status: res.status,
          body: res.body,
          retryAfter: res.headers["retry-after"],
          host,
          sent: sent - t0,
          ms,
        };
      })),
    );
    const ms = created.map((x) => x.ms).sort((a, b) => a - b);
    const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))];
    console.error(
      `[storm] ${CREATES} creates answered in ${((Date.now() - t0) / 1000).toFixed(1)} s; per create p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms; last 201 sent at ${Math.max(...created.filter((x) => x.status === 201).map((x) => x.sent))} ms, first 503 at ${Math.min(...created.filter((x) => x.status === 503).map((x) => x.sent))} ms`,
    );
    const statuses = new Map<number, number>();
    for (const x of created) statuses.set(x.status, (statuses.get(x.status) ?? 0) + 1);
    expect(Object.fromEntries(statuses)).toEqual({ 201: SIZE, 503: CREATES - SIZE });
    // Every host served some of the storm.
    for (const h of hosts) expect(created.some((x) => x.host === h.base && x.status === 201)).toBe(true);
    const sandboxes = served();
    expect(new Set(sandboxes.map((s) => s.sandboxId)).size).toBe(SIZE);
    expect(new Set(sandboxes.map((s) => s.pod)).size).toBe(SIZE);
    // The 503s are the documented "no idle pod" answer, to retry after a second.
    for (const x of created.filter((y) => y.status === 503)) {
      expect(body(x)).toEqual({
        error: {
          code: "Unavailable",
          message: expect.stringMatching(/^no idle sandbox in faults\/storm right now \(tried \d+\)$/),
        },
      });
      expect(x.retryAfter).toBe("1");
    }
    // Each pod carried one sandbox id, ever: the one its 201 named.
    await until(
      "the watch to see every claim",
      30_000,
      async () => claims.ids.size === SIZE || claims.broken,
    );
    expect(claims.broken).toBeUndefined();
    console.error(`[storm] the claims watch was resumed ${claims.resumed} times`);
    expect(claims.twice()).toEqual([]);
    for (const s of sandboxes) expect([...(claims.ids.get(s.pod) ?? [])]).toEqual([s.sandboxId]);
  });

  it("released, each of the 800 is recorded exactly once: in the table, and through every host's API", async () => {
    const { c, hosts, claims } = r;
    const sandboxes = served();
    const released = await inBatches(SIZE, IN_FLIGHT, async (i) => {
      const id = sandboxes[i]?.sandboxId ?? "";
      return (await c.api("DELETE", `/sandboxes/${id}`, undefined, 60_000, hostOf(i))).status;
    });
    expect(released.filter((s) => s !== 204)).toEqual([]);
    // All idle again, and exactly these 800 recorded, each once, in the table.
    const claimed = await expectSettled(r, POOL, [], 180_000);
    expect([...claimed].sort()).toEqual(sandboxes.map((s) => s.sandboxId).sort());
    // Through the API, in pages of 300 each read from the next host: the same 800, once each.
    const paged: string[] = [];
    let after: string | undefined;
    for (let page = 0; page === 0 || after; page++) {
      const q = `/history?namespace=${NS}&limit=300${after ? `&after=${encodeURIComponent(after)}` : ""}`;
      const res = await c.api("GET", q, undefined, 30_000, hostOf(page));
      expect(res.status).toBe(200);
      const read = JSON.parse(res.body) as { records: { sandboxId: string }[]; next?: string };
      paged.push(...read.records.map((x) => x.sandboxId));
      after = read.next;
    }
    expect(paged).toHaveLength(SIZE);
    expect([...paged].sort()).toEqual([...claimed].sort());
    // The pods went back to idle with no second claim.
    expect(claims.twice()).toEqual([]);
    for (const h of hosts) expect(troubles(h)).toEqual([]);
  });
});
