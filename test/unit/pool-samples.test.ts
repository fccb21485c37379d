import { describe, expect, it } from "vitest";
import { PoolSamples, poolSamplesOf } from "../../lib/console/pool-samples.ts";

const T0 = Date.parse("2026-11-26T10:00:00Z");
const at = (seconds: number) => new Date(T0 + seconds * 1000);
const s = (idle: number, running: number, desired: number) => ({ idle, running, desired });

describe("PoolSamples", () => {
  it("keeps a pool's samples of the last hour, oldest first", () => {
    const samples = new PoolSamples();
    samples.add("ns/p", s(2, 0, 2), at(0));
    samples.add("ns/p", s(1, 1, 2), at(30));
    samples.add("ns/q", s(5, 0, 5), at(30));
    expect(samples.window("ns/p", at(45))).toEqual([
      { at: at(0).getTime(), idle: 2, running: 0, desired: 2 },
      { at: at(30).getTime(), idle: 1, running: 1, desired: 2 },
    ]);
    expect(samples.window("ns/q", at(45))).toHaveLength(1);
    expect(samples.window("ns/none", at(45))).toEqual([]);
    // A narrower span, and points after `now` left out.
    expect(samples.window("ns/p", at(45), 20_000).map((p) => p.idle)).toEqual([1]);
    expect(samples.window("ns/p", at(10)).map((p) => p.idle)).toEqual([2]);
  });

  it("keeps at most one point per slot, the newest sample of it", () => {
    const samples = new PoolSamples({ windowMs: 60_000, points: 6 }); // 10 s slots
    for (let t = 0; t < 10; t++) samples.add("ns/p", s(t, 0, 9), at(t));
    expect(samples.window("ns/p", at(9))).toEqual([{ at: at(9).getTime(), idle: 9, running: 0, desired: 9 }]);
    // A late sample (older than the slot's point) does not overwrite the newer one.
    samples.add("ns/p", s(100, 0, 9), at(5));
    expect(samples.window("ns/p", at(9)).map((p) => p.idle)).toEqual([9]);
  });

  it("holds a fixed number of points per pool however long it samples", () => {
    const samples = new PoolSamples({ windowMs: 3_600_000, points: 120 });
    for (let t = 0; t < 3 * 3600; t += 1) samples.add("ns/p", s(t % 7, 1, 7), at(t));
    const points = samples.window("ns/p", at(3 * 3600));
    expect(points).toHaveLength(120);
    expect(points[0]?.at).toBeGreaterThan(at(2 * 3600).getTime());
    expect(points.at(-1)?.at).toBe(at(3 * 3600 - 1).getTime());
  });

  it("leaves out points older than the window, and reuses their slots", () => {
    const samples = new PoolSamples({ windowMs: 60_000, points: 6 });
    samples.add("ns/p", s(1, 0, 1), at(0));
    expect(samples.window("ns/p", at(60))).toEqual([]);
    samples.add("ns/p", s(2, 0, 1), at(60)); // the same ring slot as at(0)
    expect(samples.window("ns/p", at(60)).map((p) => p.idle)).toEqual([2]);
  });

  it("records a whole sampling and drops the pools that vanished for a window", () => {
    const samples = new PoolSamples({ windowMs: 60_000, points: 6 });
    samples.record(
      new Map([
        ["ns/p", s(1, 0, 1)],
        ["ns/gone", s(1, 0, 1)],
      ]),
      at(0),
    );
    // Missing from one sampling (a reconciler restart empties the gauges a moment): kept.
    samples.record(new Map([["ns/p", s(0, 1, 1)]]), at(30));
    expect(samples.pools().sort()).toEqual(["ns/gone", "ns/p"]);
    expect(samples.window("ns/gone", at(30))).toHaveLength(1);
    // No point left in the window: dropped.
    samples.record(new Map([["ns/p", s(0, 1, 1)]]), at(61));
    expect(samples.pools()).toEqual(["ns/p"]);
  });
});

describe("poolSamplesOf", () => {
  it("reads idle, running and desired per pool from the gauges' JSON", () => {
    const gauge = (phase: string, values: [string, string, number][]) => ({
      name: `agentbox_sandboxpool_replicas_${phase}`,
      values: values.map(([namespace, pool, value]) => ({
        labels: { namespace, pool, sandbox_env: "" },
        value,
      })),
    });
    const samples = poolSamplesOf([
      {
        name: "agentbox_sandbox_create_total",
        values: [{ labels: { namespace: "a", pool: "p" }, value: 9 }],
      },
      gauge("idle", [
        ["a", "p", 2],
        ["b", "q", 0],
      ]),
      gauge("running", [["a", "p", 1]]),
      gauge("desired", [
        ["a", "p", 3],
        ["b", "q", 1],
      ]),
      gauge("starting", [["a", "p", 7]]),
    ]);
    expect(Object.fromEntries(samples)).toEqual({
      "a/p": { idle: 2, running: 1, desired: 3 },
      "b/q": { idle: 0, running: 0, desired: 1 },
    });
  });
});
