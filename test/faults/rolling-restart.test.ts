import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PENDING_REQUESTS_PREFIX } from "../../lib/pool/pending-requests.ts";
import { until } from "../integration/support/kube.ts";
import { poolObject } from "../integration/support/steps.ts";
import { Churn } from "./support/churn.ts";
import type { HostProcess } from "./support/fault-cluster.ts";
import { expectSettled, type Replicas, startReplicas, troubles } from "./support/replicas.ts";

// A rollout of three hosts under churn, one host at a time as a Deployment's RollingUpdate does
// it: SIGTERM (the drain of ADR 0029), wait for the exit, start it again, wait for /readyz, then
// the next. Clients spread over the hosts and retry a failed request once on the next one: not
// one create fails for them. Every sandbox claimed is recorded once, the pool returns to all-idle,
// and no stopped host leaves a pending-demand mark behind. Before it, the three hosts (one machine,
// one hostname) each publish a pending-demand mark of their own (AGENTBOX_INSTANCE_ID).

let r: Replicas;
const NS = "faults";
const POOL = { namespace: NS, name: "rollout", size: 12, pullDelay: "500ms" };

beforeAll(async () => {
  r = await startReplicas(
    `faults-${process.pid}-rollout`,
    { AGENTBOX_SHUTDOWN_SETTLE_SECONDS: "1", AGENTBOX_SHUTDOWN_GRACE_SECONDS: "10" },
    POOL,
  );
  await r.c.kube.createPool(NS, poolObject(NS, "empty", 0) as never);
}, 240_000);
afterAll(async () => {
  await r?.close();
});

/** marks are the pending-demand marks on a pool (each host's waiting creates, by instance). */
const marks = async (pool: string) =>
  Object.keys((await r.c.kube.getPool(NS, pool)).metadata?.annotations ?? {}).filter((k) =>
    k.startsWith(PENDING_REQUESTS_PREFIX),
  );

describe("three hosts on one machine", () => {
  it("each publish their own pending-demand mark for their waiting creates", async () => {
    const { c, hosts } = r;
    // A create waiting on each host, for a pool with no pod: nothing serves them, all end 503.
    const waiting = Promise.all(
      hosts.map((h) => c.api("POST", "/sandboxes", { pool: `${NS}/empty`, waitTimeout: 8 }, 30_000, h.base)),
    );
    waiting.catch(() => {}); // awaited below; kept from going unhandled when the marks fail
    const all = await until("a mark of each host at once", 6000, async () => {
      const now = await marks("empty");
      return now.length === hosts.length && now;
    });
    expect(all.sort()).toEqual(hosts.map((h) => `${PENDING_REQUESTS_PREFIX}faults-${h.port}`).sort());
    expect((await waiting).map((x) => x.status)).toEqual([503, 503, 503]);
    await until("the marks removed", 10_000, async () => (await marks("empty")).length === 0);
  });
});

describe("a rolling restart of three hosts under churn", () => {
  it("fails no create for a client that retries once on another host", async () => {
    const { c, hosts } = r;
    const churn = new Churn(
      c,
      `${NS}/${POOL.name}`,
      6,
      30,
      hosts.map((h) => h.base),
    );
    const servedBy = (h: HostProcess, since: number) =>
      churn.outcomes.some((a) => a.op === "create" && a.status === 201 && a.host === h.base && a.at >= since);
    await until("creates served by every host", 30_000, async () => hosts.every((h) => servedBy(h, 0)));
    const stopped: HostProcess[] = [];
    for (const [i, old] of hosts.entries()) {
      old.child.kill("SIGTERM");
      expect(await old.exited).toBe("0");
      stopped.push(old);
      // Started again where it served: the same address, as a new pod behind the same Service.
      const again = i === 0 ? await c.startHost() : await c.startReplica(old.port);
      hosts[i] = again;
      const back = Date.now();
      await until(`host ${i + 1} serving creates again`, 30_000, async () => servedBy(again, back));
    }
    await churn.stop();

    const creates = churn.outcomes.filter((a) => a.op === "create");
    console.error(
      `[rollout] ${creates.length} creates, ${churn.answers.filter((a) => a.retryOf).length} retried on another host`,
    );
    expect(creates.filter((a) => a.status !== 201)).toEqual([]);
    expect(churn.outcomes.filter((a) => a.op === "release" && ![204, 404].includes(a.status))).toEqual([]);
    // The restarts were felt: first tries that found their host gone went to the next one.
    expect(churn.answers.some((a) => a.retryOf && stopped.some((h) => h.base === a.retryOf?.host))).toBe(
      true,
    );

    await expectSettled(r, POOL, churn.handedOut);
    // Each stopped host removed its own mark; none is left for waiters nobody serves.
    expect(await marks(POOL.name)).toEqual([]);
    for (const h of [...stopped, ...hosts]) expect(troubles(h)).toEqual([]);
  });
});
