import { readFileSync } from "node:fs";
import { request } from "node:https";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import { ApiServerUnreachable } from "../../lib/kube/errors.ts";
import { until } from "../integration/support/kube.ts";
import { poolObject } from "../integration/support/steps.ts";
import { Churn } from "./support/churn.ts";
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
  await c.kube.createPool(NS, poolObject(NS, POOL, 4, { defaultStartupTimeout: "10s" }) as never);
  await c.allIdle(NS, POOL, 4);
}, 180_000);
afterAll(async () => {
  await c?.close();
});

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

  it("under create and release churn, every request is answered in bounded time and the pool settles back to idle", async () => {
    const churn = new Churn(c, `${NS}/${POOL}`, 3);
    await until("some sandboxes before the outage", 30_000, async () => churn.handedOut.size >= 3);
    const before = churn.answers.length;
    await stopped(() => new Promise((r) => setTimeout(r, 4000)));
    const after = churn.answers.length;
    await until("creates served again after the outage", 30_000, async () =>
      churn.since(after).some((a) => a.op === "create" && a.status === 201),
    );
    await churn.stop();
    const during = churn.answers.slice(before, after);
    expect(during.map((a) => a.status)).toContain(503);
    // Answered, all of them (0 would be no answer), each within the host's bounds, never a 500.
    expect(churn.answers.filter((a) => ![201, 204, 404, 503, 504].includes(a.status))).toEqual([]);
    expect(churn.answers.filter((a) => a.ms > 12_000)).toEqual([]);
    expect(unhandled()).toEqual([]);
    expect(c.host.child.exitCode).toBeNull();
    // Every sandbox handed out was released and recorded once: the reconciler (its own thread)
    // recovered too and brought each pod back through Stopping to idle.
    await c.allIdle(NS, POOL, 4);
    const records = await c.history(NS);
    for (const id of churn.handedOut) expect(records.filter((r) => r.sandboxId === id)).toHaveLength(1);
  });

  it("a full restart of the apiserver during churn: nothing lost, nothing twice, no false timeouts", async () => {
    const churn = new Churn(c, `${NS}/${POOL}`, 3);
    await until("some sandboxes before the restart", 30_000, async () => churn.handedOut.size >= 3);
    const before = churn.answers.length;
    await c.restart("kube-apiserver");
    const after = churn.answers.length;
    await until("creates served after the restart", 60_000, async () =>
      churn.since(after).some((a) => a.op === "create" && a.status === 201),
    );
    await churn.stop();
    // The restart was felt (503s while the apiserver was gone), and answered, all of it.
    expect(churn.answers.slice(before, after).map((a) => a.status)).toContain(503);
    expect(churn.answers.filter((a) => ![201, 204, 404, 503, 504].includes(a.status))).toEqual([]);
    expect(unhandled()).toEqual([]);
    await c.allIdle(NS, POOL, 4);
    const records = (await c.history(NS)) as { sandboxId: string; failureReason?: string }[];
    for (const id of churn.handedOut) expect(records.filter((r) => r.sandboxId === id)).toHaveLength(1);
    // The outage (seconds) is shorter than the startup timeout (10 s) and than any idle timeout:
    // no sandbox may have been ended as if it had failed to start or gone idle.
    expect(
      records.filter((r) => r.failureReason === "StartupTimeout" || r.failureReason === "IdleTimeout"),
    ).toEqual([]);
  });

  it("a watch is bounded too: no headers in time, or open past its timeoutSeconds, fails as unreachable", async () => {
    const watch = nodeKubeWatch(c.kc, { headerTimeoutMs: 1000, graceMs: 1000 });
    const path = `/api/v1/namespaces/${NS}/pods`;
    const ignore = () => false;
    const failed = async (p: Promise<void>) => {
      const t0 = Date.now();
      const error = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      return { error, ms: Date.now() - t0 };
    };
    // Opened against a stopped apiserver: no answer within the header bound.
    const unanswered = await stopped(() =>
      failed(watch({ method: "GET", path }, ignore, new AbortController().signal)),
    );
    expect(unanswered.error).toBeInstanceOf(ApiServerUnreachable);
    expect(String(unanswered.error)).toContain("no answer within 1000 ms");
    expect(unanswered.ms).toBeLessThan(5000);
    // Opened while it answers, asking for 1 s; then it stops: the stream is given up on at 1 s + grace.
    let opened!: () => void;
    const open = new Promise<void>((r) => {
      opened = r;
    });
    const stream = failed(
      watch(
        { method: "GET", path, query: { timeoutSeconds: "1" } },
        () => {
          opened();
          return false;
        },
        new AbortController().signal,
      ),
    );
    await open; // the pool's pods, ADDED
    const silent = await stopped(() => stream);
    expect(silent.error).toBeInstanceOf(ApiServerUnreachable);
    expect(String(silent.error)).toContain("past its 1 s");
    expect(silent.ms).toBeLessThan(5000);
  });
});
