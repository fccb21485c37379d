import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { claimSandbox } from "../../functions/claim-sandbox.ts";
import { targetDigests } from "../../functions/digests.ts";
import type { HostDeps } from "../../functions/host-deps.ts";
import { releaseSandbox } from "../../functions/release-sandbox.ts";
import { reconcileEnv } from "../../functions/runs/reconcile-env.ts";
import { reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { execute } from "../../functions/steps/execute.ts";
import { nodeKubeTransport } from "../../hosts/node/kube-transport.ts";
import type { SandboxRecord } from "../../lib/history/record.ts";
import type { HistoryStore } from "../../lib/history/store.ts";
import { isTerminating } from "../../lib/kube/action.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import type { KubeTransport } from "../../lib/kube/transport.ts";
import { planStarting } from "../../lib/reconcile/starting.ts";
import { planStopping } from "../../lib/reconcile/stopping.ts";
import { ENVS, envObject, TEMPLATES, templateObject } from "./support/envs.ts";
import { kube, until } from "./support/kube.ts";
import { isReady, phaseOf, poolTest, reconcileUntil, runUntil } from "./support/steps.ts";

// A run that crashes after its k-th write, for every k, followed by normal runs: the pool still
// converges, each sandbox's record is inserted once, and every pod ends idle exactly once. The
// crash is a transport (and history) that, once the k-th write has reached the apiserver, loses
// that write's answer and fails every later call, as a process killed at that point would.

const t = poolTest("crash");
const { kc, custom } = kube();
const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** crashPoint arms a crash after the k-th write of the next run; disarmed, it passes everything. */
function crashPoint(real: KubeTransport) {
  const s = { crashAfter: 0, writes: 0, crashed: false, created: 0, createdPools: 0 };
  /** ran counts, per pod, the patches that moved it to running and landed. */
  const ran = new Map<string, number>();
  const check = () => {
    if (s.crashed) throw new Error("crashed (injected)");
  };
  const transport: KubeTransport = async (req) => {
    check();
    const res = await real(req);
    if (req.method === "POST" && req.path.endsWith("/pods") && res.status === 201) s.created++;
    if (req.method === "POST" && req.path.endsWith("/sandboxpools") && res.status === 201) s.createdPools++;
    const toRunning = JSON.stringify(req.body ?? "").includes('sandbox-phase","value":"running"');
    if (req.method === "PATCH" && res.status === 200 && toRunning) {
      const pod = req.path.split("/").pop() ?? "";
      ran.set(pod, (ran.get(pod) ?? 0) + 1);
    }
    if (s.crashAfter > 0 && WRITES.has(req.method) && ++s.writes >= s.crashAfter) {
      s.crashed = true;
      check();
    }
    return res;
  };
  return {
    transport,
    check,
    arm: (k: number) => Object.assign(s, { crashAfter: k, writes: 0, crashed: false }),
    disarm: () => Object.assign(s, { crashAfter: 0, writes: 0, crashed: false }),
    get crashed() {
      return s.crashed;
    },
    /** created counts the pods the apiserver created through this transport (201s to a pod POST). */
    get created() {
      return s.created;
    },
    ran,
    /** createdPools counts the SandboxPools the apiserver created through this transport. */
    get createdPools() {
      return s.createdPools;
    },
  };
}

/**
 * interposer runs `hook` just before the k-th write (of those made through it) is sent: another
 * actor's write lands between a run's decision and that write. before(0, …) disarms it.
 */
function interposer(real: KubeTransport) {
  const s = { at: 0, writes: 0, fired: false, hook: async () => {} };
  const transport: KubeTransport = async (req) => {
    if (s.at > 0 && WRITES.has(req.method) && ++s.writes === s.at) {
      s.fired = true;
      await s.hook();
    }
    return real(req);
  };
  return {
    transport,
    before: (k: number, hook: () => Promise<void>) =>
      Object.assign(s, { at: k, writes: 0, fired: false, hook }),
    get fired() {
      return s.fired;
    },
  };
}

const point = crashPoint(nodeKubeTransport(kc));
const inserted = new Map<string, number>();
const history: HistoryStore = {
  put: async (record: SandboxRecord) => {
    point.check();
    const outcome = await t.deps.history.put(record);
    if (outcome === "inserted") inserted.set(record.sandboxId, (inserted.get(record.sandboxId) ?? 0) + 1);
    return outcome;
  },
  get: (id) => t.deps.history.get(id),
  query: (q) => t.deps.history.query(q),
  putEvent: (e) => t.deps.history.putEvent(e),
  events: (id) => t.deps.history.events(id),
};
const deps: HostDeps = { ...t.deps, kube: new KubeClient(point.transport), history };

const POOL = "crash";
const AGENT = "registry.local/sandbox/agent:1";
const SANDBOXES = 3;

/**
 * prepare brings the pool to the state the crashed run acts on: `replicas` pods idle, then
 * SANDBOXES of them claimed, run and released, with their idle image back (ready for
 * complete-stopping), and one more replica asked for (a pod to create). Returns the sandbox IDs.
 */
async function prepare(round: number, replicas: number): Promise<string[]> {
  point.disarm();
  const pods = () => t.pods(POOL);
  await reconcileUntil(deps, t.ns, POOL, `${replicas} idle pods`, async () => {
    const ps = await pods();
    return (
      ps.length === replicas &&
      ps.every((p) => phaseOf(p) === "idle" && isReady(p) && !p.metadata?.deletionTimestamp)
    );
  });
  const ids = Array.from({ length: SANDBOXES }, (_, i) => `crash-${round}-${i}`);
  const idle = await pods();
  for (const [i, sandboxId] of ids.entries()) {
    const claimed = await claimSandbox(deps, idle[i] as V1Pod, {
      sandboxId,
      containerImages: { sandbox: "registry.local/sandbox/agent:1" },
    });
    expect(claimed.ok).toBe(true);
  }
  const running = await reconcileUntil(deps, t.ns, POOL, "the sandboxes running", async () => {
    const ps = (await pods()).filter((p) => phaseOf(p) === "running");
    return ps.length === SANDBOXES ? ps : undefined;
  });
  const pool = await deps.kube.getPool(t.ns, POOL);
  for (const pod of running) {
    const released = await releaseSandbox(deps, pool, pod, { stopReason: "Released" });
    expect(released.ok).toBe(true);
  }
  // Wait, without running any step, until kwok has put the idle image back on all three.
  await until("the released pods ready to return to idle", 30_000, async () => {
    const ps = await pods();
    return planStopping(pool, ps, await targetDigests(deps, ps), deps.now()).length === SANDBOXES;
  });
  await deps.kube.patchPool(t.ns, POOL, [{ op: "replace", path: "/spec/replicas", value: replicas + 1 }]);
  return ids;
}

/**
 * claimAllIdle waits (reconciling) until the pool has SANDBOXES idle, Ready pods and claims each
 * as `<pool>-<round>-<i>` with the agent image, or `options`' fields; returns the pods and IDs.
 */
async function claimAllIdle(
  stepDeps: HostDeps,
  pool: string,
  round: number,
  options: { containerImages?: Record<string, string>; idleTimeoutSeconds?: number } = {},
): Promise<{ idle: V1Pod[]; ids: string[] }> {
  const idle = await reconcileUntil(stepDeps, t.ns, pool, `${SANDBOXES} idle pods`, async () => {
    const ps = await t.pods(pool);
    return ps.length === SANDBOXES && ps.every((p) => phaseOf(p) === "idle" && isReady(p)) ? ps : undefined;
  });
  const ids = idle.map((_, i) => `${pool}-${round}-${i}`);
  for (const [i, sandboxId] of ids.entries())
    expect(
      (
        await claimSandbox(stepDeps, idle[i] as V1Pod, {
          sandboxId,
          containerImages: { sandbox: "registry.local/sandbox/agent:1" },
          ...options,
        })
      ).ok,
    ).toBe(true);
  return { idle, ids };
}

describe("a run crashed after its k-th write, for every k", () => {
  it("converges on the next runs: records inserted once, every pod idle, none created twice", async () => {
    await t.createPool(POOL, SANDBOXES);
    let replicas = SANDBOXES;
    const crashedAt: number[] = [];
    for (let k = 1; k <= 20; k++) {
      const ids = await prepare(k, replicas);
      replicas += 1;
      const createdBefore = point.created;
      point.arm(k);
      const crashed = await reconcilePool(deps, t.ns, POOL).then(
        () => point.crashed,
        () => point.crashed,
      );
      point.disarm();
      await reconcileUntil(deps, t.ns, POOL, `round ${k} converged`, async () => {
        const ps = await t.pods(POOL);
        return ps.length === replicas && ps.every((p) => phaseOf(p) === "idle" && isReady(p));
      });
      for (const id of ids) expect(inserted.get(id), `record of ${id} after a crash at write ${k}`).toBe(1);
      // One replica more was asked for: exactly one pod was created, however the runs crashed
      // (a create whose answer was lost is found by its deterministic name, not made again).
      expect(point.created - createdBefore, `pods created around a crash at write ${k}`).toBe(1);
      if (!crashed) break; // the run did fewer than k writes: every crash point is covered
      crashedAt.push(k);
    }
    // The run on this state writes several times (three returns to idle, a create, the status).
    expect(crashedAt.length).toBeGreaterThanOrEqual(4);
    expect(crashedAt).toEqual(crashedAt.map((_, i) => i + 1));
  }, 300_000);

  it("an idle release crashed at any write still releases each sandbox once, as IdleTimeout", async () => {
    const IDLE = "idle-crash";
    // Idle since the start counts: no activity report is needed for a sandbox to be idle.
    const idleDeps: HostDeps = { ...deps, idleRelease: "since-start" };
    await t.createPool(IDLE, SANDBOXES);
    const crashedAt: number[] = [];
    try {
      for (let k = 1; k <= 20; k++) {
        point.disarm();
        t.deps.clock.offsetMs = 0;
        const { ids } = await claimAllIdle(idleDeps, IDLE, k, { idleTimeoutSeconds: 30 });
        await reconcileUntil(idleDeps, t.ns, IDLE, "the sandboxes running", async () =>
          (await t.pods(IDLE)).every((p) => phaseOf(p) === "running"),
        );
        t.deps.clock.offsetMs = 120_000; // 90 s past their idle timeout
        point.arm(k);
        const crashed = await reconcilePool(idleDeps, t.ns, IDLE).then(
          () => point.crashed,
          () => point.crashed,
        );
        point.disarm();
        await reconcileUntil(idleDeps, t.ns, IDLE, `round ${k} back to idle`, async () => {
          const ps = await t.pods(IDLE);
          return ps.length === SANDBOXES && ps.every((p) => phaseOf(p) === "idle" && isReady(p));
        });
        for (const id of ids) {
          expect(inserted.get(id), `record of ${id} after a crash at write ${k}`).toBe(1);
          expect((await t.deps.history.get(id))?.failureReason).toBe("IdleTimeout");
        }
        if (!crashed) break;
        crashedAt.push(k);
      }
    } finally {
      t.deps.clock.offsetMs = 0;
    }
    // Three releases (and their events) at least: every one of them was a crash point.
    expect(crashedAt.length).toBeGreaterThanOrEqual(3);
  }, 300_000);

  it("an Env run crashed after each of its writes: each member pool created once, the Env's status converges", async () => {
    const template = `crash-${t.ns}`;
    await custom.createClusterCustomObject({
      ...TEMPLATES,
      body: templateObject(template, "v1", "python:3"),
    });
    try {
      const crashedAt: number[] = [];
      for (let k = 1; k <= 20; k++) {
        const env = `env-${k}`;
        const members = [`${env}-a`, `${env}-b`];
        await custom.createNamespacedCustomObject({
          ...ENVS,
          namespace: t.ns,
          body: envObject(
            t.ns,
            env,
            template,
            members.map((name) => ({ name, spec: { replicas: 1 }, config: { scalingGroup: "default" } })),
          ),
        });
        const before = point.createdPools;
        point.arm(k);
        const crashed = await reconcileEnv(deps, t.ns, env).then(
          () => point.crashed,
          () => point.crashed,
        );
        point.disarm();
        await runUntil(
          `Env ${env} converged after a crash at write ${k}`,
          () => reconcileEnv(deps, t.ns, env),
          async () => {
            const found = await deps.kube.getEnv(t.ns, env);
            const observed =
              found.status?.clusters?.find((c) => c.clusterID === "local")?.observedMembers ?? [];
            const pools = (await deps.kube.listPools(t.ns)).items.filter((p) =>
              members.includes(p.metadata?.name ?? ""),
            );
            return pools.length === members.length && observed.length === members.length;
          },
        );
        expect(point.createdPools - before, `member pools created around a crash at write ${k}`).toBe(
          members.length,
        );
        if (!crashed) break;
        crashedAt.push(k);
      }
      // Two pool creates and the Env's status, at least: each a crash point.
      expect(crashedAt.length).toBeGreaterThanOrEqual(3);
    } finally {
      await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template }).catch(() => {});
    }
  }, 300_000);

  it("a start crashed after each of its writes: every sandbox reaches Running once, by one patch", async () => {
    const START = "start-crash";
    await t.createPool(START, SANDBOXES);
    const crashedAt: number[] = [];
    for (let k = 1; k <= 20; k++) {
      point.disarm();
      await claimAllIdle(deps, START, k);
      const pool = await deps.kube.getPool(t.ns, START);
      // Wait, running no step, until kwok runs the new image on all three.
      await until("the claimed pods ready to run", 30_000, async () => {
        const ps = await t.pods(START);
        return (
          planStarting(pool, ps, await targetDigests(deps, ps), deps.now()).filter(
            (a) => a.why === "sandbox is running",
          ).length === SANDBOXES
        );
      });
      point.ran.clear();
      point.arm(k);
      const crashed = await reconcilePool(deps, t.ns, START).then(
        () => point.crashed,
        () => point.crashed,
      );
      point.disarm();
      const running = await reconcileUntil(deps, t.ns, START, `round ${k} running`, async () => {
        const ps = await t.pods(START);
        return ps.every((p) => phaseOf(p) === "running") ? ps : undefined;
      });
      for (const pod of running)
        expect(
          point.ran.get(pod.metadata?.name ?? ""),
          `patches to running of ${pod.metadata?.name} around a crash at write ${k}`,
        ).toBe(1);
      for (const pod of running) {
        const released = await releaseSandbox(deps, pool, pod, { stopReason: "Released" });
        expect(released.ok).toBe(true);
      }
      if (!crashed) break;
      crashedAt.push(k);
    }
    expect(crashedAt.length).toBeGreaterThanOrEqual(3);
  }, 300_000);

  it("a startup timeout crashed after each of its writes: each sandbox recorded once as StartupTimeout, each pod replaced once", async () => {
    const STUCK = "stuck-crash";
    await t.createPool(STUCK, SANDBOXES, { defaultStartupTimeout: "20s" });
    const crashedAt: number[] = [];
    try {
      for (let k = 1; k <= 30; k++) {
        point.disarm();
        t.deps.clock.offsetMs = 0;
        const { idle, ids } = await claimAllIdle(deps, STUCK, k, {
          containerImages: { sandbox: "registry.invalid/unpullable:1" },
        });
        t.deps.clock.offsetMs = 60_000; // 40 s past their startup timeout
        const createdBefore = point.created;
        point.arm(k);
        // A timeout takes two runs: the first makes it final on the pod, the second records it
        // and deletes the pod. The crash counts the writes of both (once crashed, all fail).
        const crashed = await reconcilePool(deps, t.ns, STUCK)
          .then(() => reconcilePool(deps, t.ns, STUCK))
          .then(
            () => point.crashed,
            () => point.crashed,
          );
        point.disarm();
        await reconcileUntil(deps, t.ns, STUCK, `round ${k} replaced`, async () => {
          const ps = await t.pods(STUCK);
          return (
            ps.length === SANDBOXES &&
            ps.every(
              (p) =>
                phaseOf(p) === "idle" && isReady(p) && !idle.some((o) => o.metadata?.uid === p.metadata?.uid),
            )
          );
        });
        for (const id of ids) {
          expect(inserted.get(id), `record of ${id} after a crash at write ${k}`).toBe(1);
          expect((await t.deps.history.get(id))?.failureReason).toBe("StartupTimeout");
        }
        // Deterministic names: a replacement whose create answer was lost is not made twice.
        expect(point.created - createdBefore, `pods created around a crash at write ${k}`).toBe(SANDBOXES);
        if (!crashed) break;
        crashedAt.push(k);
      }
    } finally {
      t.deps.clock.offsetMs = 0;
    }
    // Three marks, three deletes and their events at least: each a crash point.
    expect(crashedAt.length).toBeGreaterThanOrEqual(9);
  }, 600_000);

  it("a start that completes while its startup timeout is written: a sandbox that ran is never recorded as StartupTimeout, each recorded once", async () => {
    const RACE = "start-race";
    // Slow pulls: a claimed pod stays starting (and its version current) for a while, so the
    // timeout's writes can land before the start completes as well as after.
    await t.createPool(RACE, SANDBOXES, {
      defaultStartupTimeout: "20s",
      template: {
        metadata: { annotations: { "kwok.agentbox.dev/pull-delay": "4s" } },
        spec: {
          containers: [
            {
              name: "sandbox",
              image: "registry.local/sandbox/base:1",
              resources: { requests: { cpu: "250m", memory: "256Mi" } },
            },
          ],
        },
      },
    });
    const race = interposer(point.transport);
    // The timeout's run: its clock 40 s past the startup timeout, its writes interposed.
    const late: HostDeps = {
      ...deps,
      kube: new KubeClient(race.transport),
      now: () => new Date(Date.now() + 60_000),
    };
    let timedOut = 0;
    let ran = 0;
    const interposedAt: number[] = [];
    for (let k = 1; k <= 12; k++) {
      point.disarm();
      point.ran.clear();
      const { idle, ids } = await claimAllIdle(deps, RACE, k);
      const pool = await deps.kube.getPool(t.ns, RACE);
      // The timeout is decided on the pods as claimed: nothing ran yet.
      const snapshot = { pool, pods: await t.pods(RACE) };
      // The start completes (kwok runs the new image, a run completes it) just before the
      // timeout's k-th write reaches the apiserver.
      race.before(k, async () => {
        const starting = await until(`round ${k}: kwok runs the new images`, 30_000, async () => {
          const ps = (await t.pods(RACE)).filter((p) => !isTerminating(p) && phaseOf(p) === "starting");
          return ps.every((p) => p.status?.containerStatuses?.[0]?.image === AGENT) && ps;
        });
        const digests = await targetDigests(deps, starting);
        await execute(
          deps,
          planStarting(pool, starting, digests, deps.now()).filter((a) => a.why === "sandbox is running"),
        );
      });
      await reconcilePool(late, t.ns, RACE, "complete-starting", snapshot);
      const interposed = race.fired;
      race.before(0, async () => {});
      // Runs on the real clock settle every sandbox: running, or ended and its pod replaced.
      const settled = await reconcileUntil(deps, t.ns, RACE, `round ${k} settled`, async () => {
        const ps = await t.pods(RACE);
        const claimedLeft = ps.filter((p) => idle.some((o) => o.metadata?.uid === p.metadata?.uid));
        return (
          ps.length === SANDBOXES &&
          ps.every(
            (p) => !isTerminating(p) && (phaseOf(p) === "running" || (phaseOf(p) === "idle" && isReady(p))),
          ) &&
          claimedLeft.every((p) => phaseOf(p) === "running") &&
          ps
        );
      });
      // Counted before the releases (their patches test the phase "running" too).
      const started = new Map(point.ran);
      for (const pod of settled.filter((p) => phaseOf(p) === "running"))
        expect((await releaseSandbox(deps, pool, pod, { stopReason: "Released" })).ok).toBe(true);
      await reconcileUntil(deps, t.ns, RACE, `round ${k} back to idle`, async () => {
        const ps = await t.pods(RACE);
        return ps.length === SANDBOXES && ps.every((p) => phaseOf(p) === "idle" && isReady(p));
      });
      for (const [i, id] of ids.entries()) {
        const podName = idle[i]?.metadata?.name ?? "";
        const record = await t.deps.history.get(id);
        expect(inserted.get(id), `record of ${id}, start completed before write ${k}`).toBe(1);
        if (started.get(podName)) {
          ran++;
          expect(started.get(podName), `patches to running of ${podName} in round ${k}`).toBe(1);
          expect(record, `${id} ran: completed before write ${k}`).toMatchObject({ stopReason: "Released" });
          expect(record?.failureReason).toBeUndefined();
        } else {
          timedOut++;
          expect(record, `${id} never ran: completed after write ${k}`).toMatchObject({
            stopReason: "Failed",
            failureReason: "StartupTimeout",
          });
        }
      }
      if (!interposed) break; // the start completed after every write of the timeout
      interposedAt.push(k);
    }
    // Both outcomes happened: starts that won the race ran, and timeouts that won it ended them.
    expect(interposedAt.length).toBeGreaterThanOrEqual(3);
    expect(ran).toBeGreaterThan(0);
    expect(timedOut).toBeGreaterThan(0);
  }, 600_000);
});
