import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../integration/support/kube.ts";
import { poolObject } from "../integration/support/steps.ts";
import { Churn } from "./support/churn.ts";
import { type FaultCluster, faultCluster } from "./support/fault-cluster.ts";

// The host is killed (SIGKILL: no shutdown, requests cut mid-flight, the reconciler thread gone
// with it) while agents create and release sandboxes, then started again. Nothing it did is lost
// and nothing is done twice: every sandbox a caller learned of is released and recorded exactly
// once, sandboxes whose answer was lost end by their lifetime, and the pool returns to all-idle.

let c: FaultCluster;
const NS = "faults";
const POOL = "kill";
const SIZE = 6;

beforeAll(async () => {
  c = await faultCluster(`faults-${process.pid}-kill`);
  await c.kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
  await c.kube.createPool(NS, poolObject(NS, POOL, SIZE) as never);
  await c.allIdle(NS, POOL, SIZE);
}, 180_000);
afterAll(async () => {
  await c?.close();
});

describe("the host is killed during churn", () => {
  it("every sandbox handed out is released and recorded once, and the pool returns to all-idle", async () => {
    const churn = new Churn(c, `${NS}/${POOL}`, 3, 15);
    await until("sandboxes before the kill", 30_000, async () => churn.handedOut.size >= 4);
    const killed = c.host;
    killed.child.kill("SIGKILL");
    expect(await killed.exited).toBe("SIGKILL");
    const down = churn.answers.length;
    await new Promise((r) => setTimeout(r, 1000));
    await c.startHost();
    await until("creates served by the new host", 30_000, async () =>
      churn.since(down).some((a) => a.op === "create" && a.status === 201),
    );
    await churn.stop();
    // What callers saw: answers, or no answer (0) while the host was gone; never a 500.
    expect(churn.answers.filter((a) => ![0, 201, 204, 404, 503, 504].includes(a.status))).toEqual([]);
    // Sandboxes whose 201 was lost with the host end by their 15 s lifetime.
    await c.allIdle(NS, POOL, SIZE, 90_000);
    const records = await c.history(NS);
    for (const id of churn.handedOut) expect(records.filter((r) => r.sandboxId === id)).toHaveLength(1);
    const ids = records.map((r) => r.sandboxId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(c.host.lines.filter((l) => /unhandled rejection|uncaught exception/.test(l))).toEqual([]);
  });
});
