// The Node host in a process of its own, for benchmarks that must tell its CPU apart from the
// load generator's (in production they are different machines). The parent forks it with the
// cluster name, `on`/`off` for the reconciles and HostOverrides as JSON (its ready message says
// where its sandbox router listens, if it runs one), then asks over IPC: "key" (mint an API key),
// "tick" (one reconcile pass over every pool), "idle" (wait for queued runs), "loop" (the event
// loop's delay since the last "loop", in ms; the first one starts measuring), "memory"
// (process.memoryUsage() after a full GC), "close".
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createApiKey } from "../functions/api/create-api-key.ts";
import { tick } from "../functions/runs/tick.ts";
import { readState } from "../infra/cluster/state.ts";
import { benchHost, type HostOverrides } from "./support.ts";

/** HostRequest is what the parent asks; each answer echoes its id. */
export type HostRequest = { id: number } & (
  | { op: "key"; team: string; user: string }
  | { op: "tick" }
  | { op: "idle" }
  | { op: "loop" }
  | { op: "memory" }
  | { op: "close" }
);

const [name = "", reconcile = "on", overrides = "{}"] = process.argv.slice(2);
const state = readState(name);
if (!state || !process.send) throw new Error(`host-process: no cluster "${name}", or no IPC channel`);
const send = (m: unknown) => process.send?.(m);
const off = reconcile === "off";
const { host } = await benchHost(state, {
  tickSeconds: off ? 0 : 5,
  ...(off ? { auditTriggers: false } : {}),
  ...(JSON.parse(overrides) as HostOverrides),
});
// The delay is sampled every millisecond, which wakes the event loop a thousand times a second
// (about 13 ms of CPU a second at rest): it starts with the first "loop", so a bench that does not
// read it (bench:hosts counts each host's CPU) does not pay for it.
const loop = monitorEventLoopDelay({ resolution: 1 });
let looping = false;
process.on("message", async (m: HostRequest) => {
  try {
    if (m.op === "key") {
      const key = await createApiKey(
        { kube: host.deps.kube, apiKeys: host.deps.apiKeys, now: () => new Date() },
        { team: m.team, user: m.user },
      );
      send({ id: m.id, key });
    } else if (m.op === "tick") {
      await tick(host.deps, { periodMs: 0, jitter: 0, concurrency: 4 });
      send({ id: m.id });
    } else if (m.op === "loop") {
      if (!looping) loop.enable();
      looping = true;
      const ms = (ns: number) => Math.round(ns / 1e4) / 100;
      send({ id: m.id, p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max) });
      loop.reset();
    } else if (m.op === "memory") {
      // A full GC first (V8's gc, exposed at run time), so the heap figures are live objects.
      setFlagsFromString("--expose-gc");
      (runInNewContext("gc") as () => void)();
      send({ id: m.id, ...process.memoryUsage() });
    } else if (m.op === "idle") {
      await host.reconciler.idle();
      send({ id: m.id });
    } else {
      await host.close();
      send({ id: m.id });
      process.exit(0);
    }
  } catch (e) {
    send({ id: m.id, error: String(e) });
  }
});
send({
  ready: true,
  ...(host.dataPlane ? { dataPlane: { ...host.dataPlane.ports, pid: host.dataPlane.pid() } } : {}),
});
