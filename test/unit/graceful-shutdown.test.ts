// The pure pieces of a host's shutdown (ADR 0029): the drain's order and bounds (on fake timers,
// over a scripted server), /readyz, and the patch that hands a waited start back.
import type { V1Pod } from "@kubernetes/client-node";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../hosts/app.ts";
import { type DrainTarget, drain } from "../../hosts/node/drain.ts";
import { handBackStartPatch } from "../../lib/lifecycle/hand-back-start.ts";
import type { Log } from "../../lib/util/log.ts";

const quiet: Log = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * scripted is a drain target whose requests end when `end` is called; it records each step with
 * the fake time it came at.
 */
function scripted(requests: number) {
  const steps: string[] = [];
  let open = requests;
  const idle: (() => void)[] = [];
  const at = (step: string) => steps.push(`${step}@${Date.now()}`);
  const target: DrainTarget = {
    notReady: () => at("notReady"),
    stopAccepting: () => at("stopAccepting"),
    inFlight: () => open,
    settled: () => (open === 0 ? Promise.resolve() : new Promise((r) => idle.push(r))),
    stopWaits: () => at("stopWaits"),
    cut: async () => {
      at(`cut(${open})`);
    },
  };
  const end = (n = 1) => {
    open -= n;
    if (open === 0) for (const r of idle.splice(0)) r();
  };
  return { target, steps, end };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("drain", () => {
  it("is not ready at once, serves on for the settle, then closes and waits for the requests under way", async () => {
    vi.useFakeTimers({ now: 0 });
    const s = scripted(2);
    const done = drain(s.target, { settleMs: 3000, graceMs: 25_000 }, quiet);
    expect(s.steps).toEqual(["notReady@0"]);
    await vi.advanceTimersByTimeAsync(2999);
    expect(s.steps).toEqual(["notReady@0"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(s.steps).toEqual(["notReady@0", "stopAccepting@3000"]);
    await vi.advanceTimersByTimeAsync(4000);
    s.end(2);
    expect(await done).toEqual({ atClose: 2, stopped: 0, cut: 0 });
    // Nothing was waiting any more: stopping the waits changes nothing, and nothing is cut.
    expect(s.steps).toEqual(["notReady@0", "stopAccepting@3000", "stopWaits@7000", "cut(0)@7000"]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("stops the waits still going 5 s before the grace ends and cuts what is left when it ends", async () => {
    vi.useFakeTimers({ now: 0 });
    const s = scripted(3);
    const done = drain(s.target, { settleMs: 0, graceMs: 25_000 }, quiet);
    await vi.advanceTimersByTimeAsync(1000);
    s.end();
    await vi.advanceTimersByTimeAsync(19_000);
    expect(s.steps).toEqual(["notReady@0", "stopAccepting@0", "stopWaits@20000"]);
    // One stopped wait answers; one request never does.
    s.end();
    await vi.advanceTimersByTimeAsync(5000);
    expect(await done).toEqual({ atClose: 3, stopped: 2, cut: 1 });
    expect(s.steps.slice(-2)).toEqual(["stopWaits@25000", "cut(1)@25000"]);
  });

  it("cuts as soon as the stopped waits have answered, and keeps half of a short grace for them", async () => {
    vi.useFakeTimers({ now: 0 });
    const s = scripted(1);
    const done = drain(s.target, { settleMs: 0, graceMs: 1000 }, quiet);
    await vi.advanceTimersByTimeAsync(500);
    expect(s.steps).toEqual(["notReady@0", "stopAccepting@0", "stopWaits@500"]);
    await vi.advanceTimersByTimeAsync(20);
    s.end();
    expect(await done).toEqual({ atClose: 1, stopped: 1, cut: 0 });
    expect(s.steps.at(-1)).toBe("cut(0)@520");
  });
});

describe("GET /readyz", () => {
  it("answers 200 while the host serves and 503 once it stops, without a key and telling nothing else", async () => {
    let ready = true;
    const app = createApp({ callbackToken: "c".repeat(24), logger: quiet, ready: () => ready });
    const serving = await app.request("/readyz");
    expect([serving.status, await serving.text()]).toEqual([200, "ok"]);
    ready = false;
    const stopping = await app.request("/readyz");
    expect([stopping.status, await stopping.text()]).toEqual([503, "stopping"]);
    // Liveness is another question: a draining host is alive.
    expect((await app.request("/healthz")).status).toBe(200);
  });

  it("is always ready on a host that never stops (the Worker)", async () => {
    const app = createApp({ callbackToken: "c".repeat(24), logger: quiet });
    expect((await app.request("/readyz")).status).toBe(200);
  });
});

describe("handBackStartPatch", () => {
  const pod = (annotations: Record<string, string>): V1Pod => ({
    metadata: {
      name: "p-0",
      namespace: "ns",
      resourceVersion: "7",
      labels: { "agentbox.navix.sh/sandbox-id": "sbx-1" },
      annotations,
    },
  });

  it("removes the waiter-until, on condition that the pod still holds that sandbox and that mark", () => {
    const until = "2026-11-23T12:01:00Z";
    expect(handBackStartPatch(pod({ "agentbox.navix.sh/waiter-until": until }))).toEqual([
      { op: "test", path: "/metadata/labels/agentbox.navix.sh~1sandbox-id", value: "sbx-1" },
      { op: "test", path: "/metadata/annotations/agentbox.navix.sh~1waiter-until", value: until },
      { op: "remove", path: "/metadata/annotations/agentbox.navix.sh~1waiter-until" },
    ]);
  });

  it("has nothing to hand back without a mark or a sandbox", () => {
    expect(handBackStartPatch(pod({}))).toBeUndefined();
    expect(
      handBackStartPatch({ metadata: { annotations: { "agentbox.navix.sh/waiter-until": "x" } } }),
    ).toBeUndefined();
  });
});
