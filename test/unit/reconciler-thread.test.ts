import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { startReconcilerThread } from "../../hosts/node/reconciler-child.ts";
import { createMetrics } from "../../lib/metrics/metrics.ts";
import type { Log } from "../../lib/util/log.ts";
import { nowhere, until } from "../integration/support/kube.ts";

function recordingLog() {
  const entries: { level: string; obj: object; msg?: string }[] = [];
  const at = (level: string) => (obj: object, msg?: string) => {
    entries.push({ level, obj, ...(msg === undefined ? {} : { msg }) });
  };
  const log: Log = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
  return { log, entries };
}

/** threadToNowhere starts a reconciler thread against an apiserver that is not there, logging to entries. */
async function threadToNowhere() {
  const { log, entries } = recordingLog();
  const historyPath = join(mkdtempSync(join(tmpdir(), "reconciler-")), "history.sqlite");
  const metrics = createMetrics(new Registry());
  const reconciler = await startReconcilerThread(
    { kubeconfig: nowhere(), historyPath, tickSeconds: 0, tickConcurrency: 1 },
    log,
    metrics.reconcilerRestarts,
  );
  return { reconciler, entries, metrics };
}

// Each test starts real worker threads that load the host's modules: on a loaded machine that
// alone may take longer than vitest's default 5 s, so the tests' own deadlines are what bound them.
describe("the reconciler thread", { timeout: 60_000 }, () => {
  it("runs steps in its own thread: errors come back to the caller, logs to the host's logger", async () => {
    const { reconciler, entries } = await threadToNowhere();
    try {
      await expect(reconciler.run("reconcile", "ns", "pool")).rejects.toThrow(/127\.0\.0\.1:1|ECONNREFUSED/);
      // An audit batch is accepted at once; its runs fail in the thread and are logged here.
      reconciler.audit({
        pods: [["ns/pool/pool-0", { notOlderThan: "12" }]],
        pools: ["ns/pool"],
        envs: { envs: [], pools: [], templates: [] },
      });
      await reconciler.idle();
      expect(entries.some((e) => e.level === "warn" && e.msg === "reconcile failed")).toBe(true);
      // The thread counted those requests in its own registry, for the host's /metrics: no answer.
      const requests = (await reconciler.metrics()).find(
        (m) => m.name === "agentbox_apiserver_requests_total",
      );
      expect(requests?.values.filter((v) => v.labels.code === "0").length).toBeGreaterThan(0);
    } finally {
      await reconciler.close();
    }
    await expect(reconciler.idle()).rejects.toThrow(/restarting|exited/);
  });

  it("is started again after it dies, and serves calls again", async () => {
    const { reconciler, entries, metrics } = await threadToNowhere();
    try {
      await reconciler.idle();
      expect(await reconciler.kill()).toBe(1);
      // Until the new thread is up, calls fail at once rather than hang.
      await expect(reconciler.idle()).rejects.toThrow(/restarting/);
      await until("the restarted thread to answer", 10_000, async () =>
        reconciler.idle().then(
          () => true,
          () => false,
        ),
      );
      expect(entries.map((e) => e.msg)).toEqual(
        expect.arrayContaining(["reconciler thread exited", "reconciler thread down; starting it again"]),
      );
      expect((await metrics.reconcilerRestarts.get()).values[0]?.value).toBe(1);
      // The new thread runs steps as the first did.
      await expect(reconciler.run("reconcile", "ns", "pool")).rejects.toThrow(/127\.0\.0\.1:1|ECONNREFUSED/);
    } finally {
      await reconciler.close();
    }
  });

  it("fails to start, with the reason, when its settings cannot work", async () => {
    const { log } = recordingLog();
    await expect(
      startReconcilerThread(
        { kubeconfig: "clusters: [", historyPath: ":memory:", tickSeconds: 0, tickConcurrency: 1 },
        log,
      ),
    ).rejects.toThrow(/before it was ready: .+/);
  });
});
