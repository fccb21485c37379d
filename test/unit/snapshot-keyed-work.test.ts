import { describe, expect, it } from "vitest";
import { KeyedWork } from "../../functions/snapshots/keyed-work.ts";

// The snapshot agent's work queue: one run per key at a time, a bounded number of keys at once,
// a key asked for while it runs run once more after it, a failed run tried again.

/** gate is a promise the test opens. */
function gate() {
  let open = () => {};
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return { opened, open };
}

describe("KeyedWork", () => {
  it("never runs a key twice at once, runs it once more when asked meanwhile, and bounds the keys", async () => {
    const log: string[] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    let running = 0;
    let most = 0;
    const work = new KeyedWork(
      async (key) => {
        running++;
        most = Math.max(most, running);
        log.push(`start ${key}`);
        const g = gate();
        gates.set(key, g);
        await g.opened;
        log.push(`end ${key}`);
        running--;
      },
      { parallel: 2, failed: () => {} },
    );
    work.add("a");
    work.add("a");
    work.add("b");
    work.add("c");
    expect(log).toEqual(["start a", "start b"]);
    gates.get("a")?.open();
    await new Promise((r) => setTimeout(r, 0));
    // a was asked again while it ran: it queues behind c, which was waiting already.
    expect(log).toEqual(["start a", "start b", "end a", "start c"]);
    gates.get("b")?.open();
    await new Promise((r) => setTimeout(r, 0));
    expect(log.slice(4)).toEqual(["end b", "start a"]);
    gates.get("a")?.open();
    gates.get("c")?.open();
    await work.idle();
    expect(log.filter((l) => l.startsWith("start"))).toEqual(["start a", "start b", "start c", "start a"]);
    expect(most).toBe(2);
  });

  it("tries a failed key again after a pause, and stop aborts the run under way", async () => {
    const failures: string[] = [];
    let calls = 0;
    const stopped = gate();
    const work = new KeyedWork(
      async (_key, signal) => {
        calls++;
        if (calls === 1) throw new Error("apiserver down");
        signal.addEventListener("abort", () => stopped.open());
        await stopped.opened;
      },
      { parallel: 1, retryMs: [10], failed: (key, e) => failures.push(`${key}: ${String(e)}`) },
    );
    work.add("k");
    await work.idle();
    expect(failures).toEqual(["k: Error: apiserver down"]);
    const deadline = Date.now() + 5_000;
    while (calls < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(calls).toBe(2);
    await work.stop();
    work.add("k");
    expect(calls).toBe(2);
  });
});
