import { readFileSync } from "node:fs";
import { request } from "node:https";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SANDBOX_PHASE, SANDBOX_POOL_LABEL } from "../../lib/api/keys.ts";
import { until } from "../integration/support/kube.ts";
import { isReady, phaseOf, poolObject } from "../integration/support/steps.ts";
import { type FaultCluster, faultCluster } from "./support/fault-cluster.ts";

// The apiserver stops answering (SIGSTOP) while the host serves: every request the host makes is
// bounded (1 s reads and writes here), every caller gets an answer (a 503 to retry, never a hang
// or a 500), the host process survives it, and once the apiserver is back (SIGCONT) the host
// serves and reconciles again by itself.

let c: FaultCluster;
const NS = "faults";
const POOL = "outage";

beforeAll(async () => {
  c = await faultCluster(`faults-${process.pid}-outage`, {
    AGENTBOX_KUBE_READ_TIMEOUT_SECONDS: "1",
    AGENTBOX_KUBE_LIST_TIMEOUT_SECONDS: "2",
    AGENTBOX_KUBE_WRITE_TIMEOUT_SECONDS: "1",
  });
  await c.kc.makeApiClient(CoreV1Api).createNamespace({
    body: { metadata: { name: NS } },
  });
  await c.kube.createPool(NS, poolObject(NS, POOL, 4) as never);
  await allIdle(4);
}, 180_000);
afterAll(async () => {
  await c?.close();
});

/** allIdle waits until the pool has n pods, all idle and Ready, none Starting or Stopping. */
async function allIdle(n: number, timeoutMs = 60_000) {
  await until(`${n} idle pods in ${POOL}`, timeoutMs, async () => {
    const pods = (await c.kube.listPods(NS, `${SANDBOX_POOL_LABEL}=${POOL}`)).items;
    return pods.length === n && pods.every((p) => phaseOf(p) === SANDBOX_PHASE.IDLE && isReady(p));
  });
}

/** stopped runs fn while the apiserver is stopped, and always continues it afterwards. */
async function stopped<T>(fn: () => Promise<T>): Promise<T> {
  c.signal("kube-apiserver", "SIGSTOP");
  try {
    return await fn();
  } finally {
    c.signal("kube-apiserver", "SIGCONT");
  }
}

/**
 * slowCreate sends a create whose body arrives in two parts, `gapMs` apart: the host starts the
 * key check with the headers, so it fails (the apiserver is stopped) while the body is still
 * arriving.
 */
function slowCreate(gapMs: number): Promise<{ status: number; body: string }> {
  const body = JSON.stringify({ pool: `${NS}/${POOL}` });
  return new Promise((resolve, reject) => {
    const req = request(
      `https://127.0.0.1:${c.state.hostPort}/v1/sandboxes`,
      {
        method: "POST",
        ca: readFileSync(c.state.caCert),
        headers: {
          "x-api-key": c.key,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
        },
        timeout: 20_000,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => {
          text += d;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("no answer within 20 s")));
    req.on("error", reject);
    req.write(body.slice(0, 5));
    setTimeout(() => req.end(body.slice(5)), gapMs);
  });
}

const unhandled = () => c.host.lines.filter((l) => /unhandled rejection|uncaught exception/.test(l));

describe("the apiserver stops answering", () => {
  it("a key check that fails while the body arrives is a 503, observed at once; the host serves on", async () => {
    const answer = await stopped(() => slowCreate(2500));
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body).error.message).toMatch(
      /cannot reach the API server .*no answer within 1000 ms/,
    );
    expect(unhandled()).toEqual([]);
    expect(c.host.child.exitCode).toBeNull();
    await until(
      "the host to serve again",
      20_000,
      async () => (await c.api("GET", "/sandboxes")).status === 200,
    );
  });

  it("under create and release churn, every request is answered (201, 204, 503 or 504 with its sandbox) and the pool settles back to idle", async () => {
    const statuses: number[] = [];
    let stop = false;
    const client = async () => {
      while (!stop) {
        const started = Date.now();
        const created = await c.api(
          "POST",
          "/sandboxes",
          { pool: `${NS}/${POOL}`, wait: true, waitTimeout: 2 },
          15_000,
        );
        statuses.push(created.status);
        // Bounded: no request outlives the host's request timeouts by much (no hang).
        expect(Date.now() - started).toBeLessThan(12_000);
        // A 504 still hands out its sandbox (it did not run within the wait): release it too.
        const parsed = JSON.parse(created.body);
        const id: string | undefined =
          created.status === 201
            ? parsed.sandboxId
            : created.status === 504
              ? parsed.error.sandbox?.sandboxId
              : undefined;
        if (!id) {
          await new Promise((r) => setTimeout(r, 200));
          continue;
        }
        await until(`release of ${id}`, 30_000, async () => {
          const res = await c.api("DELETE", `/sandboxes/${id}`, undefined, 15_000);
          statuses.push(res.status);
          return res.status === 204 || res.status === 404;
        });
      }
    };
    const clients = [client(), client(), client()];
    await until(
      "some sandboxes before the outage",
      30_000,
      async () => statuses.filter((s) => s === 201).length >= 3,
    );
    const before = statuses.length;
    await stopped(() => new Promise((r) => setTimeout(r, 4000)));
    const during = statuses.slice(before);
    await until("creates served again after the outage", 30_000, async () =>
      statuses.slice(before + during.length).some((s) => s === 201),
    );
    stop = true;
    await Promise.all(clients);
    expect(during).toContain(503);
    expect(statuses.filter((s) => ![201, 204, 404, 503, 504].includes(s))).toEqual([]);
    expect(unhandled()).toEqual([]);
    expect(c.host.child.exitCode).toBeNull();
    // Every sandbox handed out was released: the reconciler (its own thread) recovered too and
    // brought each pod back through Stopping to idle.
    await allIdle(4, 60_000);
  });
});
