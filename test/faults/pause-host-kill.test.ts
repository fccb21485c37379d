import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePorts } from "../../infra/cluster/ports.ts";
import { RESUME_ATTEMPT_ANNOTATION, SANDBOX_ID_LABEL, SANDBOX_PHASE } from "../../lib/crd/keys.ts";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import { until } from "../integration/support/kube.ts";
import { phaseOf, poolObject } from "../integration/support/steps.ts";
import { type FaultCluster, faultCluster, type HostProcess } from "./support/fault-cluster.ts";
import { CarrierWatch, envdFile, type PauseRig, type Reached, startPauseRig } from "./support/pause-rig.ts";

// Issue #39: the host is killed (SIGKILL: no shutdown, the pause or resume call cut off between
// two of its writes) while it pauses or resumes a sandbox, then started again. The SandboxSnapshot
// carries the operation: the restarted host's tick sweep finishes the pause, and a resume whose
// host died is taken over at its deadline (Resumed when its pod was claimed, else Paused). The
// sandbox never runs on two pods, and no pod stays claimed by a resume that lost.

let c: FaultCluster;
let rig: PauseRig | undefined;
const NS = "faults";
const POOL = "pk";
const SIZE = 3;
/** COMMIT_DELAY_MS holds every commit of the test's snapshot agent back, so a kill lands mid-pause. */
const COMMIT_DELAY_MS = 4000;
/** hosts are every host process the file ran: the killed ones too, whose logs case 3 reads. */
const hosts: HostProcess[] = [];
/** envdPort is where the envd stand-in serves every pod (the host's AGENTBOX_ENVD_PORT). */
let envdPort = 0;

beforeAll(async () => {
  // The host gets the stand-in's port before the stand-in runs: the stand-in needs the cluster's
  // kubeconfig, and nothing claims until the pool exists.
  [envdPort = 0] = await freePorts(1);
  c = await faultCluster(`faults-${process.pid}-pause`, {
    AGENTBOX_ENVD_PORT: String(envdPort),
    // A sealing key makes every claim run envd's /init, as a resume's env vars need.
    AGENTBOX_SEALING_KEY: "5e".repeat(32),
  });
  hosts.push(c.host);
  rig = await startPauseRig(c, envdPort, COMMIT_DELAY_MS);
  await c.kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
  await c.kube.createPool(NS, poolObject(NS, POOL, SIZE) as never);
  await c.allIdle(NS, POOL, SIZE);
}, 240_000);
afterAll(async () => {
  await rig?.stop();
  await c?.close();
});

const json = <T>(res: { body: string }) => JSON.parse(res.body) as T;

const snapshotOf = (id: string): Promise<SandboxSnapshot | undefined> =>
  c.kube.getSnapshot(NS, id).catch((e: unknown) => {
    if (isNotFound(e)) return undefined;
    throw e;
  });
const phaseOfSnapshot = (s: SandboxSnapshot | undefined) =>
  s && (s.status?.phase ?? SNAPSHOT_PHASE.COMMITTING);

/** holders are the pods that hold sandbox id (its label, not terminating, starting or running). */
const holders = async (id: string): Promise<V1Pod[]> =>
  (await c.kube.listPods(NS, `${SANDBOX_ID_LABEL}=${id}`)).items.filter(
    (p) =>
      !p.metadata?.deletionTimestamp &&
      [SANDBOX_PHASE.STARTING, SANDBOX_PHASE.RUNNING].includes(phaseOf(p) as never),
  );

type Answered = Reached & { sandboxId: string; phase: string };

/** create makes a running sandbox of the pool through the native API: its id. */
async function create(): Promise<string> {
  return (await createReached()).sandboxId;
}

/** createReached makes a running sandbox and answers its native view (podIP, envd token). */
async function createReached(): Promise<Answered> {
  const res = await c.api(
    "POST",
    "/sandboxes",
    { pool: `${NS}/${POOL}`, wait: true, waitTimeout: 30 },
    40_000,
  );
  expect(res.status, res.body).toBe(201);
  return json<Answered>(res);
}

/** pause pauses a running sandbox through the host and waits for its pod to be back in the pool. */
async function pause(id: string): Promise<void> {
  const res = await c.api("POST", `/sandboxes/${id}/pause`, undefined, 60_000);
  expect(res.status, res.body).toBe(200);
  expect(json<{ phase: string }>(res).phase).toBe("paused");
  await c.allIdle(NS, POOL, SIZE);
}

/** resume resumes through the (current) host, expects the same id running, and answers its view. */
async function resume(id: string): Promise<Answered> {
  const res = await c.api("POST", `/sandboxes/${id}/resume`, { waitTimeout: 60 }, 70_000);
  expect(res.status, res.body).toBe(200);
  expect(json<Answered>(res)).toMatchObject({ sandboxId: id, phase: "running" });
  return json<Answered>(res);
}

/** release deletes a sandbox (204) and waits until nothing of it is left: no snapshot, no pod. */
async function release(id: string): Promise<void> {
  const res = await c.api("DELETE", `/sandboxes/${id}`);
  expect(res.status, res.body).toBe(204);
  await until(`sandbox ${id} gone`, 60_000, async () =>
    !(await snapshotOf(id)) && (await holders(id)).length === 0 ? true : undefined,
  );
}

/** send sends a request whose answer the kill cuts off: its status, or 0 when no answer came. */
const send = (method: string, path: string, body?: unknown) =>
  c.api(method, path, body, 90_000).catch(() => ({ status: 0, body: "" }));

/** killAndRestart SIGKILLs the host and starts it again (the same settings, history and port). */
async function killAndRestart(): Promise<void> {
  const killed = c.host;
  killed.child.kill("SIGKILL");
  expect(await killed.exited).toBe("SIGKILL");
  hosts.push(await c.startHost());
}

/** recordsOf are the history records of sandbox id. */
const recordsOf = async (id: string) => (await c.history(NS)).filter((r) => r.sandboxId === id);

describe("the host is killed mid-pause and mid-resume", () => {
  it("a pause cut off while the agent commits is finished by the restarted host's sweep", async () => {
    const created = await createReached();
    const id = created.sandboxId;
    await envdFile(created, envdPort, "kept.txt", `written by ${id} before the pause`);
    const pausing = send("POST", `/sandboxes/${id}/pause`);
    await until("the pause's snapshot, Committing", 20_000, async () =>
      phaseOfSnapshot(await snapshotOf(id)) === SNAPSHOT_PHASE.COMMITTING ? true : undefined,
    );
    const t0 = Date.now();
    await killAndRestart();
    // The caller never got an answer; the pause had not completed when the host died.
    expect((await pausing).status).toBe(0);
    const paused = await until("the sweep to pause it", 60_000, async () =>
      phaseOfSnapshot(await snapshotOf(id)) === SNAPSHOT_PHASE.PAUSED ? Date.now() - t0 : undefined,
    );
    console.error(`[pause-host-kill] mid-pause kill → Paused after ${paused} ms (restart included)`);
    // The pod that ran it went back to the pool; the sandbox is paused, not ended.
    await c.allIdle(NS, POOL, SIZE);
    expect(await holders(id)).toEqual([]);
    const view = await c.api("GET", `/sandboxes/${id}`);
    expect(json<{ phase: string }>(view).phase).toBe("paused");
    expect(await recordsOf(id)).toEqual([]);
    // The snapshot the restarted host finished holds the files, on another pod or the same one.
    const resumed = await resume(id);
    expect(await holders(id)).toHaveLength(1);
    expect(resumed.access?.envdAccessToken).not.toBe(created.access?.envdAccessToken);
    expect(await envdFile(resumed, envdPort, "kept.txt")).toBe(`written by ${id} before the pause`);
    await release(id);
    await c.allIdle(NS, POOL, SIZE);
    expect(await recordsOf(id)).toHaveLength(1);
  });

  it("a resume cut off while it waits for an idle pod goes back to Paused at its deadline; a new one succeeds", async () => {
    const id = await create();
    await pause(id);
    // Every pod taken: the resume waits for one (Resuming, nothing claimed) when the host dies.
    const fillers = [];
    for (let i = 0; i < SIZE; i++) fillers.push(await create());
    const watch = new CarrierWatch(c, NS, id);
    const resuming = send("POST", `/sandboxes/${id}/resume`, { waitTimeout: 60 });
    const s = await until("the resume's Resuming write", 20_000, async () => {
      const x = await snapshotOf(id);
      return phaseOfSnapshot(x) === SNAPSHOT_PHASE.RESUMING ? x : undefined;
    });
    await killAndRestart();
    expect((await resuming).status).toBe(0);
    // A pod comes free while the dead resume still holds the snapshot: nobody claims it for it.
    await release(fillers.shift() as string);
    const deadline = Date.parse(s.status?.resume?.until ?? "");
    const back = await until("the sweep to take the dead resume back", 90_000, async () => {
      const x = await snapshotOf(id);
      return phaseOfSnapshot(x) !== SNAPSHOT_PHASE.RESUMING ? x : undefined;
    });
    console.error(
      `[pause-host-kill] dead resume (no claim) → ${phaseOfSnapshot(back)} ${Date.now() - deadline} ms after its deadline`,
    );
    expect(phaseOfSnapshot(back)).toBe(SNAPSHOT_PHASE.PAUSED);
    expect(Date.now()).toBeGreaterThanOrEqual(deadline);
    expect(await holders(id)).toEqual([]);
    await resume(id);
    const { most, samples } = await watch.stop();
    expect(samples).toBeGreaterThan(10);
    expect(most).toBe(1);
    for (const other of [id, ...fillers]) await release(other);
    await c.allIdle(NS, POOL, SIZE);
    for (const other of [id, ...fillers]) expect(await recordsOf(other)).toHaveLength(1);
  }, 240_000);

  it("a resume cut off right after its first write converges to one running sandbox", async () => {
    const id = await create();
    await pause(id);
    const watch = new CarrierWatch(c, NS, id);
    const resuming = send("POST", `/sandboxes/${id}/resume`, { waitTimeout: 60 });
    // Kill as soon as the resume is seen under way: Resuming (claiming) or Resumed (waiting for Running).
    const seen = await until("the resume under way", 20_000, async () => {
      const p = phaseOfSnapshot(await snapshotOf(id));
      return p === SNAPSHOT_PHASE.RESUMING || p === SNAPSHOT_PHASE.RESUMED ? p : undefined;
    });
    await killAndRestart();
    const answered = (await resuming).status;
    const t0 = Date.now();
    const settled = await until("the resume to converge", 90_000, async () => {
      const x = await snapshotOf(id);
      const p = phaseOfSnapshot(x);
      return p === SNAPSHOT_PHASE.RESUMED || p === SNAPSHOT_PHASE.PAUSED ? x : undefined;
    });
    console.error(
      `[pause-host-kill] kill at ${seen} (caller got ${answered}) → ${phaseOfSnapshot(settled)} after ${Date.now() - t0} ms`,
    );
    if (phaseOfSnapshot(settled) === SNAPSHOT_PHASE.RESUMED) {
      // The dead host had claimed: that one pod is the sandbox, and it comes up.
      const [pod, ...more] = await holders(id);
      expect(more).toEqual([]);
      expect(pod?.metadata?.name).toBe(settled?.status?.resume?.pod);
      expect(pod?.metadata?.annotations?.[RESUME_ATTEMPT_ANNOTATION]).toBe(settled?.status?.resume?.attempt);
      // The dead resume's claim says its caller waits for Running (waiter-until, its waitTimeout);
      // the reconcile takes the start over once that passes (ADR 0022): up to 60 s here.
      const ran = Date.now();
      await until("the resumed sandbox running", 90_000, async () => {
        const res = await c.api("GET", `/sandboxes/${id}`);
        return res.status === 200 && json<{ phase: string }>(res).phase === "running" ? true : undefined;
      });
      console.error(`[pause-host-kill] the claimed pod ran ${Date.now() - ran} ms after the resume settled`);
    } else {
      expect(await holders(id)).toEqual([]);
      await resume(id);
    }
    const { most, samples } = await watch.stop();
    expect(samples).toBeGreaterThan(10);
    expect(most).toBe(1);
    await release(id);
    await c.allIdle(NS, POOL, SIZE);
    expect(await recordsOf(id)).toHaveLength(1);
  }, 240_000);

  it("a pause whose commit misses its deadline is abandoned: the answer is final and the sandbox runs on", async () => {
    const created = await createReached();
    const id = created.sandboxId;
    await envdFile(created, envdPort, "kept.txt", `written by ${id}`);
    if (!rig) throw new Error("no pause rig");
    rig.commitDelayMs = 8000;
    try {
      const res = await c.api("POST", `/sandboxes/${id}/pause`, { waitTimeout: 2 }, 30_000);
      expect(res.status, res.body).toBe(504);
      expect(res.body).toMatch(/abandoned.*keeps running/);
      // Nothing of the pause is left (the late commit is not completed), the sandbox runs on.
      await until("the abandoned pause's snapshot gone", 30_000, async () =>
        (await snapshotOf(id)) ? undefined : true,
      );
      expect(await holders(id)).toHaveLength(1);
      expect(json<{ phase: string }>(await c.api("GET", `/sandboxes/${id}`)).phase).toBe("running");
      expect(await envdFile(created, envdPort, "kept.txt")).toBe(`written by ${id}`);
      expect(await recordsOf(id)).toEqual([]);
    } finally {
      rig.commitDelayMs = COMMIT_DELAY_MS;
    }
    // A pause within its deadline then works.
    await pause(id);
    await release(id);
    await c.allIdle(NS, POOL, SIZE);
  }, 120_000);

  it("no host logged an unhandled rejection or an uncaught exception", () => {
    expect(hosts.length).toBeGreaterThanOrEqual(4);
    for (const h of hosts)
      expect(h.lines.filter((l) => /unhandled rejection|uncaught exception/i.test(l))).toEqual([]);
  });
});
