import { describe, expect, it } from "vitest";
import { PoolRunner } from "../../functions/runs/pool-runner.ts";
import { consoleLog } from "../../lib/util/log.ts";

describe("PoolRunner", () => {
  it("coalesces triggers during a run into exactly one rerun, per pool", async () => {
    const runs: string[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const runner = new PoolRunner(async (key) => {
      runs.push(key);
      if (runs.length === 1) await gate;
    }, consoleLog());
    runner.trigger("ns/a");
    runner.trigger("ns/a");
    runner.trigger("ns/a");
    runner.trigger("ns/b");
    release();
    await runner.idle();
    expect(runs.filter((k) => k === "ns/a")).toHaveLength(2);
    expect(runs.filter((k) => k === "ns/b")).toHaveLength(1);
  });

  it("keeps going after a failed run", async () => {
    let n = 0;
    const runner = new PoolRunner(
      async () => {
        n++;
        throw new Error("boom");
      },
      { debug() {}, info() {}, warn() {}, error() {} },
    );
    await runner.trigger("ns/a");
    await runner.trigger("ns/a");
    expect(n).toBe(2);
  });
});

describe("PoolRunner minIntervalMs", () => {
  it("spaces a rerun until the interval after the previous run started", async () => {
    const starts: number[] = [];
    const runner = new PoolRunner(
      async () => {
        starts.push(Date.now());
        await new Promise((r) => setTimeout(r, 5));
      },
      { debug() {}, info() {}, warn() {}, error() {} },
      100,
    );
    runner.trigger("ns/a");
    runner.trigger("ns/a");
    await runner.idle();
    expect(starts).toHaveLength(2);
    expect((starts[1] ?? 0) - (starts[0] ?? 0)).toBeGreaterThanOrEqual(95);
  });
});

describe("PoolRunner urgent triggers", () => {
  const silent = { debug() {}, info() {}, warn() {}, error() {} };

  it("an urgent trigger during a run starts the rerun when the run ends, not after the spacing", async () => {
    const starts: number[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const runner = new PoolRunner(
      async () => {
        starts.push(Date.now());
        if (starts.length === 1) await gate;
      },
      silent,
      60_000,
    );
    const done = runner.trigger("ns/a");
    runner.trigger("ns/a", undefined, true);
    release();
    await done;
    expect(starts).toHaveLength(2);
  });

  it("an urgent trigger cuts short a rerun already waiting out the spacing", async () => {
    const starts: number[] = [];
    const runner = new PoolRunner(
      async () => {
        starts.push(Date.now());
      },
      silent,
      60_000,
    );
    const done = runner.trigger("ns/a");
    runner.trigger("ns/a");
    // The first run has ended and the rerun waits out the minute; an urgent trigger ends the wait.
    await new Promise((r) => setTimeout(r, 20));
    expect(starts).toHaveLength(1);
    runner.trigger("ns/a", undefined, true);
    await done;
    expect(starts).toHaveLength(2);
  });
});

describe("PoolRunner: a key that keeps triggering itself urgently", () => {
  it("skips the spacing once per interval, then waits it out", async () => {
    const silent = { debug() {}, info() {}, warn() {}, error() {} };
    const starts: number[] = [];
    let runner: PoolRunner | undefined;
    // Each run triggers the next urgently, as an Env run whose own write never converges would.
    runner = new PoolRunner(
      async (key) => {
        starts.push(Date.now());
        if (starts.length < 3) runner?.trigger(key, undefined, true);
      },
      silent,
      1000,
    );
    await runner.trigger("ns/a");
    expect(starts).toHaveLength(3);
    const gaps = starts.slice(1).map((t, i) => t - (starts[i] ?? 0));
    // The first rerun is hurried; the next may not be (within 1 s of it), and waits the spacing.
    expect(gaps[0]).toBeLessThan(500);
    expect(gaps[1]).toBeGreaterThanOrEqual(950);
  });
});
