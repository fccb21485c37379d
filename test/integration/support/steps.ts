import type { V1Pod } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { afterAll, beforeAll, inject } from "vitest";
import { type HostDeps, hostDeps } from "../../../functions/host-deps.ts";
import { reconcilePool } from "../../../functions/runs/reconcile-pool.ts";
import { nodeKubeTransport, nodeKubeWatch } from "../../../hosts/node/kube-transport.ts";
import type { SqliteHistoryStore } from "../../../hosts/node/sqlite-history.ts";
import { openSqlite, type SqliteUsageStore } from "../../../hosts/node/sqlite-usage.ts";
import { importSealKeys } from "../../../lib/claims/sealing.ts";
import type { SandboxPool } from "../../../lib/crd/sandbox-pool.ts";
import { KubeClient } from "../../../lib/kube/client.ts";
import { createMetrics } from "../../../lib/metrics/metrics.ts";
import type { Log } from "../../../lib/util/log.ts";
import { kube, newNamespace } from "./kube.ts";

const quiet: Log = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * sealKeys are the test host's: every claim with envd carries an envd /init hook, so the steps a
 * test drives run hooks as the host does (testDeps), instead of failing them for want of a key.
 */
const sealingKey = (inject("cluster") as ReturnType<typeof inject<"cluster">> | undefined)?.sealingKey;
/** The fault tests import this module's pool helpers without an integration cluster: no keys there. */
const sealKeys = sealingKey ? await importSealKeys(sealingKey) : undefined;

/**
 * testDeps wires the real steps to the run's cluster and an in-memory SQLite history. Its clock
 * is real time plus `clock.offsetMs`, so a test can jump past idle timeouts and protection
 * windows instead of waiting for them (the decisions only know time through `now`). It runs
 * post-start hooks as the test host does (its sealing key, the envd stand-in, its deadline).
 */
export function testDeps(): HostDeps & {
  history: SqliteHistoryStore;
  usage: SqliteUsageStore;
  clock: { offsetMs: number };
} {
  const { kc } = kube();
  const clock = { offsetMs: 0 };
  // The history and the usage samples in one in-memory database, as the Node host keeps them.
  const { history, usage } = openSqlite(":memory:");
  const deps = hostDeps({
    kube: new KubeClient(nodeKubeTransport(kc)),
    watch: nodeKubeWatch(kc),
    history,
    usage,
    now: () => new Date(Date.now() + clock.offsetMs),
    log: process.env.AGENTBOX_TEST_LOG ? consoleLogger() : quiet,
    reporter: { controller: "agentbox-functions/test", instance: `test-${process.pid}` },
    clusterId: "local",
    // Its own registry: a test can read what the steps it ran observed.
    metrics: createMetrics(new Registry()),
    ...(sealKeys
      ? {
          postStart: {
            keys: sealKeys,
            fetch: globalThis.fetch,
            retryDelaysMs: [100],
            attemptTimeoutMs: 2000,
            deadlineSeconds: inject("cluster").postStartDeadlineSeconds,
          },
        }
      : {}),
  });
  return { ...deps, history, usage, clock };
}

/**
 * withPostStart gives any step deps the test host's way of running post-start hooks: its
 * sealing key, the fake envd, its deadline, one quick retry (testDeps have it already).
 */
export async function withPostStart<T extends HostDeps>(deps: T): Promise<T> {
  const { cluster } = kube();
  deps.postStart = {
    keys: await importSealKeys(cluster.sealingKey),
    fetch: globalThis.fetch,
    retryDelaysMs: [100],
    attemptTimeoutMs: 2000,
    deadlineSeconds: cluster.postStartDeadlineSeconds,
  };
  return deps;
}

function consoleLogger(): Log {
  const w = (level: string) => (obj: object, msg?: string) => console.error(level, msg, JSON.stringify(obj));
  return { debug: w("debug"), info: w("info"), warn: w("warn"), error: w("error") };
}

/**
 * runUntil plays the tick: it runs `run` (a reconcile, a tick) and checks the condition, again and
 * again, until the condition holds or the deadline passes (then it fails with the last report).
 */
export async function runUntil<T>(
  what: string,
  run: () => Promise<unknown>,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    last = await run();
    const value = await check();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}; last report: ${JSON.stringify(last)}`,
  );
}

/** reconcileUntil runs one pool's reconcile until the condition holds (see runUntil). */
export function reconcileUntil<T>(
  deps: HostDeps,
  namespace: string,
  pool: string,
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  return runUntil(what, () => reconcilePool(deps, namespace, pool), check, timeoutMs);
}

/** poolObject is a minimal valid SandboxPool (with `annotations` on the pool itself). */
export function poolObject(
  namespace: string,
  name: string,
  replicas: number,
  spec: Record<string, unknown> = {},
  annotations?: Record<string, string>,
) {
  return {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxPool",
    metadata: { name, namespace, ...(annotations ? { annotations } : {}) },
    spec: {
      replicas,
      idleImage: "registry.local/sandbox/idle:1",
      template: {
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
      ...spec,
    },
  };
}

export const phaseOf = (pod: V1Pod) => pod.metadata?.labels?.["agentbox.navix.sh/sandbox-phase"];
export const isReady = (pod: V1Pod) =>
  pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
export const live = (pods: V1Pod[]) => pods.filter((p) => !p.metadata?.deletionTimestamp);

/**
 * poolTest sets up what every pool integration test file needs: its own namespace (created before
 * and deleted after the file's tests), real step deps, and helpers to create and read pools and
 * their pods. `ns` is available once the file's tests run.
 */
export function poolTest(prefix: string) {
  const { core, custom } = kube();
  const deps = testDeps();
  let cleanup: () => Promise<void> = async () => {};
  const t = {
    deps,
    ns: "",
    pods: async (pool: string) =>
      (
        await core.listNamespacedPod({
          namespace: t.ns,
          labelSelector: `agentbox.navix.sh/sandbox-pool=${pool}`,
        })
      ).items,
    getPool: async (name: string) =>
      (await custom.getNamespacedCustomObject({ ...POOLS, namespace: t.ns, name })) as SandboxPool,
    createPool: (
      name: string,
      replicas: number,
      spec: Record<string, unknown> = {},
      annotations?: Record<string, string>,
    ) =>
      custom.createNamespacedCustomObject({
        ...POOLS,
        namespace: t.ns,
        body: poolObject(t.ns, name, replicas, spec, annotations),
      }),
    /**
     * readyPool creates a pool and reconciles it until all its pods are idle and Ready (within
     * timeoutMs: real containers take longer than kwok's), and returns those pods.
     */
    readyPool: async (
      name: string,
      replicas: number,
      spec: Record<string, unknown> = {},
      annotations?: Record<string, string>,
      timeoutMs?: number,
    ): Promise<V1Pod[]> => {
      await t.createPool(name, replicas, spec, annotations);
      return reconcileUntil(
        deps,
        t.ns,
        name,
        `${replicas} idle pods in ${name}`,
        async () => {
          const pods = await t.pods(name);
          return pods.length === replicas && pods.every((p) => phaseOf(p) === "idle" && isReady(p)) && pods;
        },
        timeoutMs,
      );
    },
  };
  beforeAll(async () => {
    const created = await newNamespace(core, prefix);
    t.ns = created.ns;
    cleanup = created.cleanup;
  });
  afterAll(async () => {
    await cleanup();
    deps.history.close();
  });
  return t;
}

/** POOLS addresses the SandboxPool resource for the custom objects API. */
export const POOLS = { group: "agents.navix.sh", version: "v1alpha1", plural: "sandboxpools" };
