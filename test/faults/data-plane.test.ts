import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePorts } from "../../infra/cluster/ports.ts";
import { until } from "../integration/support/kube.ts";
import {
  type HeldStream,
  openStream,
  type SandboxApp,
  sandboxApp,
} from "../integration/support/sandbox-app.ts";
import { poolObject } from "../integration/support/steps.ts";
import { type FaultCluster, faultCluster } from "./support/fault-cluster.ts";

// The production host (hosts/node/in-cluster.ts) with its sandbox router on, its tick every second and
// its default idle-release mode (the router's traffic is its activity source). Each sandbox serves
// an app of the test's own on its pod IP; the test reaches it THROUGH the router (header routing)
// and holds streams open. What must hold: an open stream is activity however long nothing moves,
// an untouched sandbox is idle since its start, a release cuts its streams with an error, and a
// router killed mid-stream routes again once restarted.

let c: FaultCluster;
let routerPort: number;
const NS = "dataplane";
const POOL = "routed";
const IDLE_TIMEOUT = 5;
const apps: SandboxApp[] = [];

beforeAll(async () => {
  [routerPort = 0] = await freePorts(1);
  c = await faultCluster(`faults-${process.pid}-dp`, {
    AGENTBOX_SANDBOX_DOMAIN: "sandbox.faults.test",
    AGENTBOX_DATA_PLANE_PORT: String(routerPort),
    AGENTBOX_DATA_PLANE_TLS_PORT: "off",
    AGENTBOX_TICK_SECONDS: "1",
  });
  await c.kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
  await c.kube.createPool(NS, poolObject(NS, POOL, 4) as never);
  await c.allIdle(NS, POOL, 4);
}, 180_000);
afterAll(async () => {
  for (const app of apps) app.close();
  await c?.close();
});

/** create makes a sandbox through the API and serves the test's app on its pod IP. */
async function create(idleTimeout?: number): Promise<{ id: string; app: SandboxApp }> {
  const res = await c.api("POST", "/sandboxes", {
    pool: `${NS}/${POOL}`,
    wait: true,
    waitTimeout: 30,
    ...(idleTimeout ? { idleTimeout } : {}),
  });
  expect(res.status).toBe(201);
  const { sandboxId, podIP, phase } = JSON.parse(res.body) as {
    sandboxId: string;
    podIP: string;
    phase: string;
  };
  expect(phase).toBe("running");
  const app = await sandboxApp(podIP);
  apps.push(app);
  return { id: sandboxId, app };
}

/** stream opens a request to the sandbox's app through the router that it holds for `holdMs`. */
const stream = (id: string, app: SandboxApp, holdMs: number): HeldStream =>
  openStream(routerPort, id, app.port, `/hold?ms=${holdMs}`);

/** StopRecord is what the tests read of a history record. */
type StopRecord = { sandboxId: string; stopReason: string; failureReason?: string; failureMessage?: string };

/** recordOf is the sandbox's history record, once it has one. */
async function recordOf(id: string): Promise<StopRecord | undefined> {
  return ((await c.history(NS)) as StopRecord[]).find((r) => r.sandboxId === id);
}

/** idleSeconds reads "idle for N s" from an IdleTimeout record's message. */
const idleSeconds = (message: string | undefined) => Number(/idle for (\d+) s/.exec(message ?? "")?.[1]);

describe("the router's traffic drives idle release", () => {
  it("an open stream keeps its sandbox; idle afterwards, and untouched, both are released", async () => {
    const busy = await create(IDLE_TIMEOUT);
    const untouched = await create(IDLE_TIMEOUT);
    const held = stream(busy.id, busy.app, 20_000);
    await held.opened;
    // The untouched sandbox is idle since its start: released while the stream is still open.
    const quiet = await until("the untouched sandbox released", 30_000, () => recordOf(untouched.id));
    expect(quiet).toMatchObject({ stopReason: "Released", failureReason: "IdleTimeout" });
    expect(idleSeconds(quiet.failureMessage)).toBeGreaterThan(IDLE_TIMEOUT);
    // Nothing moved on the stream for 20 s, four idle timeouts: it still counted, to its end.
    const body = await held.done;
    expect(body).toBe("held");
    expect(await recordOf(busy.id)).toBeUndefined();
    expect(JSON.parse((await c.api("GET", `/sandboxes/${busy.id}`)).body)).toMatchObject({
      phase: "running",
    });
    // Idle from the stream's end: released after its timeout, idle since the end, not the start.
    const released = await until("the busy sandbox released once idle", 30_000, () => recordOf(busy.id));
    expect(released).toMatchObject({ stopReason: "Released", failureReason: "IdleTimeout" });
    expect(idleSeconds(released.failureMessage)).toBeGreaterThan(IDLE_TIMEOUT);
    expect(idleSeconds(released.failureMessage)).toBeLessThan(20);
  });

  it("a release mid-stream ends the stream with an error, not a hang", async () => {
    const s = await create();
    const held = stream(s.id, s.app, 120_000);
    await held.opened;
    expect((await c.api("DELETE", `/sandboxes/${s.id}`)).status).toBe(204);
    await expect(held.done).rejects.toThrow(/aborted|socket hang up|ECONNRESET|terminated/);
    // The released sandbox is no longer routed: the SDK's not-found shape.
    const after = await openStream(routerPort, s.id, s.app.port, "/hold?ms=0").done.catch((e: Error) => e);
    expect(String(after)).toMatch(/502.*The sandbox was not found/);
  });

  it("the router's host killed mid-stream: the stream errors, and the restarted host routes again", async () => {
    const s = await create();
    const held = stream(s.id, s.app, 120_000);
    await held.opened;
    c.host.child.kill("SIGKILL");
    await expect(held.done).rejects.toThrow(/aborted|socket hang up|ECONNRESET|terminated/);
    await c.startHost();
    // The new host lists where sandboxes run before it routes: the same sandbox answers again.
    await until("the sandbox routed by the restarted host", 30_000, async () => {
      const again = await openStream(routerPort, s.id, s.app.port, "/hold?ms=0")
        .done.then((b) => b)
        .catch(() => undefined);
      return again === "held";
    });
    expect(JSON.parse((await c.api("GET", `/sandboxes/${s.id}`)).body)).toMatchObject({ phase: "running" });
    expect(c.host.lines.filter((l) => /unhandled rejection|uncaught exception/.test(l))).toEqual([]);
  });
});
