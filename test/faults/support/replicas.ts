import { CoreV1Api } from "@kubernetes/client-node";
import { expect } from "vitest";
import { SANDBOX_POOL_LABEL } from "../../../lib/crd/keys.ts";
import { poolObject } from "../../integration/support/steps.ts";
import { ClaimsSeen } from "./claims-seen.ts";
import { type FaultCluster, faultCluster, type HostProcess } from "./fault-cluster.ts";
import { storedOnceEach } from "./stored.ts";

/**
 * Replicas is a fault cluster of three hosts (real processes) over one PostgreSQL history, the
 * apiserver's callbacks going through a stand-in Service, with one pool of the test's and a watch
 * of its claims from the moment all its pods were idle.
 */
export interface Replicas {
  c: FaultCluster;
  /** hosts are the three hosts; a test that starts one again puts it in its place. */
  hosts: HostProcess[];
  claims: ClaimsSeen;
  close(): Promise<void>;
}

/** PoolSetup is the test's pool: its name and size, and optionally each start's pull delay (kwok). */
export interface PoolSetup {
  namespace: string;
  name: string;
  size: number;
  pullDelay?: string;
  /** idleMs bounds the wait for all its pods idle (60 s). */
  idleMs?: number;
}

/** startReplicas starts the cluster (`env` adds host settings), the three hosts and the pool. */
export async function startReplicas(
  name: string,
  env: Record<string, string>,
  pool: PoolSetup,
): Promise<Replicas> {
  const c = await faultCluster(name, env, { postgres: true, service: true });
  const hosts = [c.host, await c.startReplica(), await c.startReplica()];
  await c.kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: pool.namespace } } });
  const spec = pool.pullDelay
    ? {
        template: {
          metadata: { annotations: { "kwok.agentbox.dev/pull-delay": pool.pullDelay } },
          spec: { containers: [{ name: "sandbox", image: "registry.local/sandbox/base:1" }] },
        },
      }
    : {};
  const t0 = Date.now();
  await c.kube.createPool(pool.namespace, poolObject(pool.namespace, pool.name, pool.size, spec) as never);
  await c.allIdle(pool.namespace, pool.name, pool.size, pool.idleMs);
  console.error(`[faults] ${pool.size} idle pods after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  // Every version of the pods from here on: a claim writes the sandbox-id label.
  const listed = await c.kube.listPods(pool.namespace, `${SANDBOX_POOL_LABEL}=${pool.name}`, { limit: 1 });
  const claims = await ClaimsSeen.start(c.kc, pool.namespace, listed.resourceVersion);
  return {
    c,
    hosts,
    claims,
    close: async () => {
      claims.close();
      await c.close();
    },
  };
}

/**
 * expectSettled checks what every replica test ends with: the pool back to all-idle (sandboxes
 * whose answer was lost end by their lifetime), no pod claimed over a claim, every sandbox handed
 * out among those claimed, and every sandbox claimed recorded exactly once in the table (and
 * nothing else). Answers the sandboxes claimed.
 */
export async function expectSettled(
  r: Replicas,
  pool: PoolSetup,
  handedOut: Iterable<string>,
  idleMs = 90_000,
): Promise<Set<string>> {
  await r.c.allIdle(pool.namespace, pool.name, pool.size, idleMs);
  expect(r.claims.broken).toBeUndefined();
  expect(r.claims.overClaimed()).toEqual([]);
  const claimed = new Set([...r.claims.ids.values()].flatMap((ids) => [...ids]));
  for (const id of handedOut) expect(claimed.has(id)).toBe(true);
  const stored = await storedOnceEach(r.c.postgres?.url ?? "", pool.namespace, claimed);
  expect([...stored.values()].filter((n) => n !== 1)).toEqual([]);
  expect([...stored.keys()].sort()).toEqual([...claimed].sort());
  return claimed;
}

/** troubles are the unhandled rejections and uncaught exceptions a host logged. */
export const troubles = (h: HostProcess | undefined) =>
  h?.lines.filter((l) => /unhandled rejection|uncaught exception/.test(l)) ?? [];
