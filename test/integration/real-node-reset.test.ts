import type { V1Pod } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { inProcessApi, postCreate, tenantKey } from "./support/in-process-api.ts";
import { kube } from "./support/kube.ts";
import { type EnvdTarget, envdAt, envdRun, envdStartBackground } from "./support/real-envd.ts";
import { realPoolSpec } from "./support/real-node.ts";
import { isReady, phaseOf, poolTest, reconcileUntil } from "./support/steps.ts";

// Issue #36, section 3: the reset on the REAL node. Two tenants take turns on one-pod pools (so
// every claim lands on the pod the other tenant just left), three cycles each, for a pool with
// idleImage, one without (the one-write fast path) and one with a sidecar: a tenant leaves a file
// in /tmp and processes running (one from envd's background start, one escaped into a session of
// its own with setsid; busybox has no nohup); the next tenant finds neither, and no container
// ever serves twice. Then a process that ignores SIGTERM at release, against two
// terminationGracePeriodSeconds: the reset's figures are printed, only its behaviour asserted.

const { cluster } = kube();
const t = poolTest("rn-reset");
const { deps, app } = inProcessApi(t.deps);
const keys: string[] = [];
const CYCLES = 3;
const TRACE = "agentbox-tenant-trace";

/** containerIds lists a pod's containers as name=containerID. */
const containerIds = (pod: V1Pod) =>
  (pod.status?.containerStatuses ?? []).map((s) => `${s.name}=${s.containerID ?? ""}`).sort();

/** readyRealPool creates a one-pod pool on the real node and reconciles until its pod is idle. */
async function readyRealPool(name: string, spec: Record<string, unknown>): Promise<V1Pod> {
  await t.createPool(name, 1, spec);
  return idleAgain(name);
}

/** idleAgain reconciles the pool (as the host's tick does) until its one pod is idle and Ready. */
function idleAgain(pool: string): Promise<V1Pod> {
  return reconcileUntil(
    deps,
    t.ns,
    pool,
    `the pod of ${pool} idle and Ready`,
    async () => {
      const [pod] = await t.pods(pool);
      return pod && !pod.metadata?.deletionTimestamp && phaseOf(pod) === "idle" && isReady(pod)
        ? pod
        : undefined;
    },
    180_000,
  );
}

/** claim creates a sandbox in `pool` with `key` through /v1 and waits until it runs. */
async function claim(pool: string, key: string) {
  const res = await postCreate(app, key, { pool: `${t.ns}/${pool}`, wait: true, waitTimeout: 120 });
  const body = (await res.json()) as {
    sandboxId: string;
    pod: string;
    access?: { envdAccessToken?: string };
  };
  expect(res.status, JSON.stringify(body)).toBe(201);
  const pod = (await t.pods(pool)).find((p) => p.metadata?.name === body.pod);
  const token = body.access?.envdAccessToken;
  if (!pod?.status?.podIP || !token) throw new Error(`sandbox ${body.sandboxId}: no pod IP or no token`);
  return { id: body.sandboxId, key, pod, envd: envdAt(pod.status.podIP, cluster.envdPort, token) };
}

/** release kills the sandbox through /v1 and reconciles until its pod is idle again; it times that. */
async function release(pool: string, s: { id: string; key: string }) {
  const started = performance.now();
  const res = await app.request(`/v1/sandboxes/${s.id}`, {
    method: "DELETE",
    headers: { "x-api-key": s.key },
  });
  expect(res.status).toBe(204);
  const pod = await idleAgain(pool);
  return { pod, ms: Math.round(performance.now() - started) };
}

/** look is what a tenant sees of earlier tenants: trace files in /tmp, and every process. */
async function look(envd: EnvdTarget) {
  const run = await envdRun(envd, "ls -A /tmp; echo ---; ps");
  expect(run.exitCode, run.stderr).toBe(0);
  const [files = "", ps = ""] = run.stdout.split("---\n");
  return { files: files.split("\n").filter((f) => f.includes(TRACE)), ps };
}

/** leaveTraces writes a file in /tmp and leaves two processes running (one in its own session), and checks they are there. */
async function leaveTraces(envd: EnvdTarget, n: number): Promise<void> {
  const write = await envdRun(envd, `echo secret-${n} > /tmp/${TRACE}-${n}; cat /tmp/${TRACE}-${n}`);
  expect(write.stdout).toBe(`secret-${n}\n`);
  await envdStartBackground(envd, "sleep 1000");
  const escaped = await envdRun(envd, "setsid sleep 1001 >/dev/null 2>&1 &");
  expect(escaped.exitCode).toBe(0);
  const seen = await look(envd);
  expect(seen.files).toEqual([`${TRACE}-${n}`]);
  expect(seen.ps).toMatch(/sleep 1000/);
  expect(seen.ps).toMatch(/sleep 1001/);
}

/**
 * tenantsTakeTurns runs CYCLES cycles of both tenants on `pool` and checks each claim finds nothing
 * of the one before, the pod is reused and no container serves two sandboxes.
 */
async function tenantsTakeTurns(pool: string, spec: Record<string, unknown>): Promise<void> {
  const first = await readyRealPool(pool, spec);
  const served: { id: string; ids: string[] }[] = [];
  const resets: number[] = [];
  let n = 0;
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    for (const key of keys) {
      const s = await claim(pool, key);
      expect(s.pod.metadata?.uid).toBe(first.metadata?.uid);
      const seen = await look(s.envd);
      expect(seen.files, `sandbox ${n} of ${pool} saw an earlier tenant's file`).toEqual([]);
      expect(seen.ps, `sandbox ${n} of ${pool} saw an earlier tenant's process`).not.toMatch(/sleep 100[01]/);
      served.push({ id: s.id, ids: containerIds(s.pod) });
      await leaveTraces(s.envd, n++);
      resets.push((await release(pool, s)).ms);
    }
  }
  const all = served.flatMap((s) => s.ids);
  expect(all.every((id) => /=containerd:\/\/[0-9a-f]{64}$/.test(id))).toBe(true);
  expect(new Set(all).size, JSON.stringify(served)).toBe(all.length);
  console.log(
    `[real-node-reset] ${pool}: ${served.length} sandboxes, release → idle ms: ${resets.join(", ")}`,
  );
}

beforeAll(async () => {
  // envd in a real container listens 1-2 s after it starts: the production hook deadline (60 s).
  if (deps.postStart) deps.postStart.deadlineSeconds = 60;
  keys.push(await tenantKey(deps, "rn-reset-a"), await tenantKey(deps, "rn-reset-b"));
});

describe("the reset on the real node: nothing of one tenant reaches the next", () => {
  it("a pool with idleImage (the claim swaps idle → sandbox-a, the reset back)", async () => {
    await tenantsTakeTurns("idle", realPoolSpec(1));
  }, 600_000);

  it("a pool without idleImage (the one-write fast path; the reset restarts the container)", async () => {
    await tenantsTakeTurns("fast", realPoolSpec(1, { idleImage: false }));
  }, 600_000);

  it("a pool with a sidecar (restarted at every reset too)", async () => {
    await tenantsTakeTurns("sidecar", realPoolSpec(1, { sidecar: true }));
  }, 600_000);
});

/** IGNORES_TERM is PID 1 of a sandbox container that ignores SIGTERM (a shell cannot trap a signal ignored on entry). */
const IGNORES_TERM = [
  "/bin/sh",
  "-c",
  "trap '' TERM; exec /sbin/agentbox-init /usr/local/bin/node /opt/envd/envd.mjs",
];

/** withCommand sets the sandbox container's command in a realPoolSpec. */
function withCommand(spec: Record<string, unknown>, command: string[]): Record<string, unknown> {
  const template = spec.template as { spec: { containers: Record<string, unknown>[] } };
  const [sandbox, ...rest] = template.spec.containers;
  return {
    ...spec,
    template: { ...template, spec: { ...template.spec, containers: [{ ...sandbox, command }, ...rest] } },
  };
}

describe("a process that ignores SIGTERM at release", () => {
  const cases = [
    { pool: "child-g2", grace: 2, main: false },
    { pool: "child-g10", grace: 10, main: false },
    { pool: "main-g2", grace: 2, main: true },
    { pool: "main-g10", grace: 10, main: true },
  ];
  it.each(cases)(
    "$pool: a TERM-ignoring process (in the main process: $main), grace $grace s",
    async (c) => {
      const base = realPoolSpec(1, { idleImage: false, terminationGracePeriodSeconds: c.grace });
      const idle = await readyRealPool(c.pool, c.main ? withCommand(base, IGNORES_TERM) : base);
      const s = await claim(c.pool, keys[0] ?? "");
      // The tenant's child ignores TERM: it survives a TERM sent to it.
      const started = await envdRun(s.envd, "(trap '' TERM; exec sleep 1234) >/dev/null 2>&1 & echo $!");
      const pid = started.stdout.trim();
      const survives = await envdRun(s.envd, `kill -TERM ${pid}; sleep 0.3; kill -0 ${pid} && echo alive`);
      expect(survives.stdout).toBe("alive\n");
      const before = containerIds(s.pod);
      const { pod, ms } = await release(c.pool, s);

      // The reset finished on the same pod, in a new container; the old one's end says how it went.
      expect(pod.metadata?.uid).toBe(idle.metadata?.uid);
      expect(containerIds(pod)).not.toEqual(before);
      const ended = pod.status?.containerStatuses?.find((x) => x.name === "sandbox")?.lastState?.terminated;
      console.log(
        `[real-node-reset] SIGTERM ignored by ${c.main ? "the main process" : "a child"}, terminationGracePeriodSeconds ${c.grace}: release → idle ${ms} ms; old container exit ${ended?.exitCode} (${ended?.reason})`,
      );
      const after = await claim(c.pool, keys[1] ?? "");
      expect((await look(after.envd)).ps).not.toMatch(/sleep 1234/);
    },
    300_000,
  );
});
