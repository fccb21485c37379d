// `npm run bench:pause`: pause and resume (issue #39) on real containers, as a user of the e2b SDK
// feels them, beside a fresh create. One cluster with the real node (kubelet, containerd, runc,
// CNI, the local registry, the node's snapshot agent) as bench:real starts it, the Node host in a
// process of its own with its sandbox router, one pool of two sandbox-a pods on the real node, and
// the official e2b SDK in a third process (bench/pause-sdk.ts). Each round, for 1 MiB and 100 MiB
// of changes in a rotating order: create → a command answered (the baseline), write the file,
// betaPause → answered and → the pod idle again, Sandbox.connect (a resume) → answered, → a
// command answered, → the file's sha256 in the sandbox (a different hash fails the bench), kill.
// See docs/benchmarks.md ("Issue #39: pause and resume").
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { down } from "../infra/cluster/down.ts";
import { nodeImages } from "../infra/cluster/real-node/node-images.ts";
import { up } from "../infra/cluster/up.ts";
import { imageRef } from "../infra/images/refs.ts";
import { SANDBOX_ID_LABEL, SANDBOX_PHASE, SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../lib/crd/keys.ts";
import type { SandboxSnapshot } from "../lib/crd/sandbox-snapshot.ts";
import { forkIpc } from "./child-ipc.ts";
import { type PauseSample, report, SIZES, type Size } from "./pause-report.ts";
import { isReady, onRealNode, PodWatch, SANDBOX_RESOURCES } from "./real-node-pods.ts";
import { SnapshotPhases } from "./snapshot-phases.ts";
import { benchNamespacesAndHost, httpsClient, waitFor } from "./support.ts";

/** ROUNDS measured rounds (each: both sizes), after WARMUP unmeasured ones. */
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const WARMUP = Number(process.env.WARMUP ?? 1);
/** SETTLE_MS: the pause after each step, so one step's leftovers (a pod's reset) miss the next. */
const SETTLE_MS = Number(process.env.SETTLE_MS ?? 1000);
const STEP_TIMEOUT_MS = 180_000;
const NS = "bench";
const POOL = "p";
const REPLICAS = 2;
const FILE = "/home/user/bench-pause.bin";
const name = `bench-pause-${process.pid}`;
const log = (line: string) => console.error(`[bench] ${line}`);
const json = JSON.stringify;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SNAPSHOTS = `/apis/agents.navix.sh/v1alpha1/namespaces/${NS}/sandboxsnapshots`;

/** idleFree: the pod is Idle, Ready and carries no sandbox (it went back to the pool). */
const idleFree = (pod: V1Pod | undefined) =>
  pod?.metadata?.labels?.[SANDBOX_PHASE_LABEL] === SANDBOX_PHASE.IDLE &&
  !pod.metadata.labels[SANDBOX_ID_LABEL] &&
  isReady(pod);

/** must fails the bench with what answered, unless the status is the one wanted. */
function must<T extends { status: number; body: string }>(what: string, want: number, res: T): T {
  if (res.status !== want) throw new Error(`${what}: ${res.status} ${res.body.slice(0, 300)}`);
  return res;
}

/** agentCommitMs is what the snapshot agent logged as the commit's time of one sandbox's generation. */
function agentCommitMs(logFile: string, sandboxId: string, generation: number): number | undefined {
  for (const line of readFileSync(logFile, "utf8").split("\n").reverse()) {
    if (!line.includes('"snapshot committed"') || !line.includes(`${NS}/${sandboxId}`)) continue;
    const entry = JSON.parse(line) as { generation?: number; ms?: number };
    if (entry.generation === generation) return entry.ms;
  }
  return undefined;
}

const loadAtStart = loadavg();
const state = await up({
  name,
  nodes: 1,
  pullDelayMs: 0,
  backoffDelayMs: 1000,
  realNode: nodeImages(log),
  log,
});
try {
  if (!state.realNode) throw new Error("the cluster came up without its real node");
  const { admin, host } = await benchNamespacesAndHost(state, NS, {
    // The E2B API seals env vars and derives envd tokens with it.
    sealingKey: randomBytes(32).toString("hex"),
    sandboxDomain: "sandbox.bench.test",
    dataPlane: { plainPort: 0 },
  });
  const router = host.dataPlane?.plain;
  if (!router) throw new Error("the host did not start its sandbox router");
  const { key } = await host.ask({ op: "key", team: "bench", user: "bench" });
  const api = httpsClient(`https://127.0.0.1:${state.hostPort}`, readFileSync(state.caCert), {
    "x-api-key": key,
  });
  const sdk = await forkIpc<object>(new URL("./pause-sdk.ts", import.meta.url), [], {
    env: {
      ...process.env,
      E2B_API_URL: `https://127.0.0.1:${state.hostPort}/e2b`,
      E2B_API_KEY: key,
      E2B_SANDBOX_URL: `http://127.0.0.1:${router}`,
      NODE_EXTRA_CA_CERTS: state.caCert,
    },
  });
  const ask = <T>(request: { op: string } & Record<string, unknown>) => sdk.ask(request) as Promise<T>;
  const kc = new KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const pods = await PodWatch.start(kc, NS);
  const phases = await SnapshotPhases.start(kc, NS);
  const pool = {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxPool",
    metadata: { name: POOL, namespace: NS },
    spec: {
      replicas: REPLICAS,
      template: {
        spec: {
          ...onRealNode,
          containers: [{ name: "sandbox", image: imageRef("sandbox-a"), resources: SANDBOX_RESOURCES }],
        },
      },
    },
  };
  must(
    "pool",
    201,
    await admin("POST", "/apis/agents.navix.sh/v1alpha1/namespaces/bench/sandboxpools", json(pool)),
  );
  const poolPods = async () =>
    (
      JSON.parse(
        (await admin("GET", `/api/v1/namespaces/${NS}/pods?labelSelector=${SANDBOX_POOL_LABEL}%3D${POOL}`))
          .body,
      ) as { items: V1Pod[] }
    ).items;
  log(`waiting for the pool's ${REPLICAS} pods to be idle and Ready on the real node`);
  await waitFor(async () => {
    const items = await poolPods();
    return items.length === REPLICAS && items.every(idleFree);
  }, 300_000);

  const podOf = async (id: string) => {
    const view = JSON.parse(must(`get ${id}`, 200, await api("GET", `/v1/sandboxes/${id}`)).body) as {
      pod?: string;
      phase?: string;
    };
    if (!view.pod) throw new Error(`sandbox ${id} has no pod (phase ${view.phase})`);
    return view.pod;
  };
  const snapshotOf = async (id: string) =>
    JSON.parse(must(`snapshot ${id}`, 200, await admin("GET", `${SNAPSHOTS}/${id}`)).body) as SandboxSnapshot;
  const agentLog = join(state.dir, "logs", "snapshot-agent.log");

  /** cycle is one sandbox's life: create, write, pause, resume, check, kill. */
  const cycle = async (size: Size, seed: string): Promise<PauseSample> => {
    const created = await ask<{ sandboxId: string; createMs: number; commandMs: number }>({
      op: "create",
      template: `${NS}/${POOL}`,
    });
    const id = created.sandboxId;
    const written = await ask<{ sha256: string; writeMs: number }>({
      op: "write",
      sandboxId: id,
      bytes: SIZES[size],
      seed,
      path: FILE,
    });
    const first = await podOf(id);
    await pause(SETTLE_MS);
    const idle = pods.until(first, idleFree, STEP_TIMEOUT_MS, "idle again after the pause");
    const p0 = performance.now();
    const paused = await ask<{ pauseMs: number }>({ op: "pause", sandboxId: id });
    const pauseAnswered = performance.now() - p0;
    const idleMs = (await idle) - p0;
    const snap = await snapshotOf(id);
    if (snap.status?.phase !== "Paused")
      throw new Error(`snapshot ${id} is ${snap.status?.phase} after the pause`);
    const seen = (phase: string, t0: number) => (phases.at(id, phase) ?? Number.NaN) - t0;
    const generation = snap.metadata?.generation ?? 1;
    await pause(SETTLE_MS);
    const r0 = performance.now();
    const resumed = await ask<{ connectMs: number; commandMs: number; hashMs: number }>({
      op: "resume",
      sandboxId: id,
      path: FILE,
      sha256: written.sha256,
    });
    const second = await podOf(id);
    await pause(SETTLE_MS);
    const idleAgain = pods.until(second, idleFree, STEP_TIMEOUT_MS, "idle again after the kill");
    await ask({ op: "kill", sandboxId: id });
    await idleAgain;
    // The agent deletes the snapshot's images, then the object goes: not left to overlap the next step.
    await waitFor(async () => (await admin("GET", `${SNAPSHOTS}/${id}`)).status === 404, STEP_TIMEOUT_MS);
    return {
      size,
      sandboxId: id,
      createMs: created.createMs,
      createCommandMs: created.commandMs,
      writeMs: written.writeMs,
      pauseMs: paused.pauseMs,
      pauseAnsweredMs: pauseAnswered,
      pauseIdleMs: idleMs,
      committingSeenMs: seen("Committing", p0),
      committedSeenMs: seen("Committed", p0),
      pausedSeenMs: seen("Paused", p0),
      agentCommitMs: agentCommitMs(agentLog, id, generation),
      layerBytes: snap.status?.bytes,
      resumeConnectMs: resumed.connectMs,
      resumeCommandMs: resumed.commandMs,
      resumeHashMs: resumed.hashMs,
      resumingSeenMs: seen("Resuming", r0),
      resumedSeenMs: seen("Resumed", r0),
      samePod: first === second,
      sha256: written.sha256,
    };
  };

  const samples: PauseSample[] = [];
  const sizes = Object.keys(SIZES) as Size[];
  for (let round = 0; round < WARMUP + ROUNDS; round++) {
    const measured = round >= WARMUP;
    const order = sizes.map((_, i) => sizes[(i + round) % sizes.length] as Size);
    for (const size of order) {
      const s = await cycle(size, `round ${round} ${size}`);
      if (measured) samples.push(s);
      log(
        `round ${round + 1}/${WARMUP + ROUNDS}${measured ? "" : " (warm-up)"} ${size}: create→command ${s.createCommandMs.toFixed(0)} ms, pause ${s.pauseMs.toFixed(0)} ms (idle ${s.pauseIdleMs.toFixed(0)} ms), resume→command ${s.resumeCommandMs.toFixed(0)} ms, layer ${s.layerBytes} bytes`,
      );
      await pause(SETTLE_MS);
    }
  }
  pods.stop();
  phases.stop();
  await sdk.ask({ op: "close" }).catch(() => {});
  await host.ask({ op: "close" });
  report(samples, { rounds: ROUNDS, warmup: WARMUP, settleMs: SETTLE_MS, loadAtStart, loadAtEnd: loadavg() });
} finally {
  await down(name, () => {});
}
