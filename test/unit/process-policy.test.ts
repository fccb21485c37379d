import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { installProcessPolicy } from "../../hosts/node/process-policy.ts";
import { installStopSignals } from "../../hosts/node/stop-signals.ts";
import type { Log } from "../../lib/util/log.ts";
import { settled } from "../../lib/util/settled.ts";

/** fakeProcess is an event emitter with a recorded exit: the policy's process, as plain data. */
function fakeProcess() {
  const events = new EventEmitter();
  const exits: number[] = [];
  const proc = {
    on: (event: string, fn: (...args: unknown[]) => void) => {
      events.on(event, fn);
      return proc;
    },
    exit: (code?: number) => {
      exits.push(code ?? 0);
    },
    exitCode: undefined as number | undefined,
  };
  const lines: string[] = [];
  const log: Log = {
    debug() {},
    info() {},
    warn() {},
    error: (_fields: object, msg: string) => lines.push(msg),
  };
  return {
    events,
    exits,
    raw: proc,
    proc: proc as unknown as Pick<NodeJS.Process, "on" | "exit" | "exitCode">,
    log,
    lines,
  };
}

describe("installProcessPolicy", () => {
  it("logs an unhandled rejection and keeps serving", () => {
    const p = fakeProcess();
    let closed = 0;
    installProcessPolicy(p.proc, p.log, async () => {
      closed++;
    });
    p.events.emit("unhandledRejection", new Error("apiserver 503"), Promise.resolve());
    expect(p.lines).toEqual(["unhandled rejection (a bug): the host keeps serving"]);
    expect(closed).toBe(0);
    expect(p.exits).toEqual([]);
  });

  it("closes and exits 1 on an uncaught exception, once however many follow", async () => {
    const p = fakeProcess();
    let closed = 0;
    installProcessPolicy(p.proc, p.log, async () => {
      closed++;
    });
    p.events.emit("uncaughtException", new Error("boom"), "uncaughtException");
    p.events.emit("uncaughtException", new Error("again"), "uncaughtException");
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(1);
    expect(p.exits).toEqual([1]);
    expect(p.raw.exitCode).toBe(1);
    expect(p.lines).toHaveLength(2);
  });
});

describe("settled", () => {
  it("fulfils with the value or the error, so a rejection before the await is observed", async () => {
    expect(await settled(Promise.resolve(3))).toEqual({ ok: true, value: 3 });
    const error = new Error("no");
    expect(await settled(Promise.reject(error))).toEqual({ ok: false, error });
  });
});

describe("installStopSignals", () => {
  it("shuts down on the first SIGTERM and exits 0 once done; a second signal exits at once", async () => {
    const p = fakeProcess();
    let finish = () => {};
    let shutdowns = 0;
    installStopSignals(p.proc, p.log, () => {
      shutdowns++;
      return new Promise<void>((r) => {
        finish = r;
      });
    });
    p.events.emit("SIGTERM");
    expect([shutdowns, p.exits]).toEqual([1, []]);
    p.events.emit("SIGINT");
    expect([shutdowns, p.exits]).toEqual([1, [130]]);
    finish();
    await new Promise((r) => setImmediate(r));
    expect(p.exits).toEqual([130, 0]);
  });

  it("exits 1 when the shutdown fails", async () => {
    const p = fakeProcess();
    installStopSignals(p.proc, p.log, () => Promise.reject(new Error("history would not close")));
    p.events.emit("SIGINT");
    await new Promise((r) => setImmediate(r));
    expect(p.exits).toEqual([1]);
    expect(p.lines).toEqual(["stopping failed"]);
  });
});
