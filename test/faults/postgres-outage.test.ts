import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../integration/support/kube.ts";
import { Churn } from "./support/churn.ts";
import type { HostProcess } from "./support/fault-cluster.ts";
import { expectSettled, type Replicas, startReplicas, troubles } from "./support/replicas.ts";

// The hosts' shared PostgreSQL history is stopped for 10 s and started again while clients of
// three hosts create and release sandboxes. Meanwhile creates go on, stops wait in their pods
// (ADR 0028), and every host answers history reads 503 with Retry-After; once the database is
// back every host reads again, and every sandbox claimed is recorded exactly once: none lost
// with the outage, none written twice by the hosts that retried it.

let r: Replicas;
const POOL = { namespace: "faults", name: "pgdown", size: 30 };
const OUTAGE_MS = 10_000;

beforeAll(async () => {
  r = await startReplicas(`faults-${process.pid}-pgdown`, {}, POOL);
}, 240_000);
afterAll(async () => {
  await r?.close();
});

/** Read is one history read's answer through one host. */
type Read = { host: string; status: number; retryAfter: unknown; code?: string };

/** read asks one host for a page of the namespace's history. */
async function read(h: HostProcess): Promise<Read> {
  const res = await r.c.api(
    "GET",
    `/history?namespace=${POOL.namespace}&limit=10`,
    undefined,
    20_000,
    h.base,
  );
  const code =
    res.status === 200 ? undefined : (JSON.parse(res.body) as { error: { code: string } }).error.code;
  return {
    host: h.base,
    status: res.status,
    retryAfter: res.headers["retry-after"],
    ...(code ? { code } : {}),
  };
}

describe("the shared history database stops for 10 s under churn", () => {
  it("loses and doubles no record; history reads answer 503 with Retry-After meanwhile, and recover", async () => {
    const { c, hosts } = r;
    const db = c.postgres?.server;
    if (!db) throw new Error("the cluster has no PostgreSQL");
    const churn = new Churn(
      c,
      `${POOL.namespace}/${POOL.name}`,
      4,
      30,
      hosts.map((h) => h.base),
    );
    await until(
      "sandboxes recorded before the outage",
      30_000,
      async () =>
        (await Promise.all(hosts.map(read))).every((x) => x.status === 200) && churn.handedOut.size >= 6,
    );
    await db.stop();
    const down = Date.now();
    const during: Read[] = [];
    while (Date.now() - down < OUTAGE_MS) {
      during.push(...(await Promise.all(hosts.map(read))));
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    const createdDuring = churn.outcomes.filter(
      (a) => a.op === "create" && a.status === 201 && a.at >= down && a.at + a.ms <= Date.now(),
    ).length;
    await db.start();
    const back = Date.now();
    await until("every host reads the history again", 30_000, async () =>
      (await Promise.all(hosts.map(read))).every((x) => x.status === 200),
    );
    console.error(
      `[pgdown] ${during.length} reads during the outage, ${createdDuring} sandboxes created meanwhile; reads back ${Date.now() - back} ms after the start`,
    );
    await until("creates served after the outage", 30_000, async () =>
      churn.outcomes.some((a) => a.op === "create" && a.status === 201 && a.at > back),
    );
    await churn.stop();

    // Every read during the outage, on every host: 503 Unavailable, to retry in 5 s.
    expect(new Set(during.map((x) => x.host)).size).toBe(hosts.length);
    expect(
      during.filter((x) => x.status !== 503 || x.retryAfter !== "5" || x.code !== "Unavailable"),
    ).toEqual([]);
    // Creates need no history: they went on.
    expect(createdDuring).toBeGreaterThan(0);
    // Callers got answers (503s only while the stops waiting for the database held pods), never a 500.
    expect(churn.answers.filter((a) => ![201, 204, 404, 503].includes(a.status))).toEqual([]);

    const claimed = await expectSettled(r, POOL, churn.handedOut);
    const ids = (await c.history(POOL.namespace)).map((x) => x.sandboxId);
    expect(ids.sort()).toEqual([...claimed].sort());
    for (const h of hosts) expect(troubles(h)).toEqual([]);
  });
});
