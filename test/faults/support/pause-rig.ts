import { join } from "node:path";
import { pino } from "pino";
import type { Committer } from "../../../functions/snapshots/committer.ts";
import { startSnapshotAgent } from "../../../functions/snapshots/snapshot-agent.ts";
import { nodeKubeWatch } from "../../../hosts/node/kube-transport.ts";
import { startEnvd } from "../../../infra/dev/envd/server.ts";
import { IMAGE_REGISTRY } from "../../../infra/images/refs.ts";
import { SANDBOX_ID_LABEL, SANDBOX_PHASE } from "../../../lib/crd/keys.ts";
import { phaseOf } from "../../integration/support/steps.ts";
import type { FaultCluster } from "./fault-cluster.ts";

/**
 * PauseRig is what a pause needs on kwok beside a fault cluster's host, run in the test process
 * so that killing the host leaves it standing: the envd stand-in (every pod's envd, and the
 * snapshot store) and the kwok nodes' snapshot agent, whose commits wait `commitDelayMs` first.
 */
export interface PauseRig {
  /** commitDelayMs is how long each commit waits before it starts; a test may change it. */
  commitDelayMs: number;
  stop(): Promise<void>;
}

/**
 * delayed is a committer whose commits wait `ms()` before they start: fault injection, so a test
 * can kill the host while its pause waits for the agent's commit (the window is otherwise a few
 * milliseconds on the stand-in). An abort during the wait ends the commit as an abort would.
 */
export function delayed(inner: Committer, ms: () => number): Committer {
  return {
    commit: async (req, signal) => {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, ms());
        signal.addEventListener("abort", () => {
          clearTimeout(timer);
          reject(signal.reason);
        });
      });
      return inner.commit(req, signal);
    },
    remove: (image, signal) => inner.remove(image, signal),
    removeRepository: (repository, signal) => inner.removeRepository(repository, signal),
  };
}

/**
 * startPauseRig starts the envd stand-in on `envdPort` (the port the cluster's host was given as
 * AGENTBOX_ENVD_PORT), reading pod instances from the cluster so a reset pod meets a fresh envd,
 * and a snapshot agent for every node over it. Its logs go to the cluster's log folder.
 */
export async function startPauseRig(
  c: FaultCluster,
  envdPort: number,
  commitDelayMs: number,
): Promise<PauseRig> {
  const envd = await startEnvd({ port: envdPort, kubeconfig: c.kc, log: () => {} });
  const log = pino({ level: "info" }, pino.destination(join(c.state.dir, "logs", "snapshot-agent.log")));
  const rig: PauseRig = {
    commitDelayMs,
    stop: async () => {
      await agent.stop();
      await new Promise<void>((resolve) => envd.server.close(() => resolve()));
    },
  };
  const agent = startSnapshotAgent({
    kube: c.kube,
    watch: nodeKubeWatch(c.kc),
    // Every node of the fault cluster is kwok's: one agent for all of them.
    fieldSelector: "spec.source.node!=none",
    committer: delayed(envd.committer, () => rig.commitDelayMs),
    registry: IMAGE_REGISTRY,
    log,
    now: () => new Date(),
    retryMs: [500, 1000],
  });
  return rig;
}

/**
 * CarrierWatch samples, every 100 ms until stopped, the pods of a namespace that carry a sandbox
 * id and hold it (starting or running, not terminating), keeping the most seen at once: two is a
 * sandbox running twice.
 */
export class CarrierWatch {
  most = 0;
  samples = 0;
  private stopped = false;
  private readonly loop: Promise<void>;

  constructor(c: FaultCluster, namespace: string, id: string) {
    this.loop = (async () => {
      while (!this.stopped) {
        const pods = await c.kube.listPods(namespace, `${SANDBOX_ID_LABEL}=${id}`).catch(() => undefined);
        if (pods) {
          const holding = pods.items.filter(
            (p) =>
              !p.metadata?.deletionTimestamp &&
              [SANDBOX_PHASE.STARTING, SANDBOX_PHASE.RUNNING].includes(phaseOf(p) as never),
          );
          this.most = Math.max(this.most, holding.length);
          this.samples++;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
  }

  async stop(): Promise<{ most: number; samples: number }> {
    this.stopped = true;
    await this.loop;
    return { most: this.most, samples: this.samples };
  }
}

/** Reached is a running sandbox as its native answer gives it: where envd is, and its token. */
export interface Reached {
  podIP?: string;
  access?: { envdAccessToken?: string };
}

/**
 * envdFile writes (`content` given) or reads one file of a running sandbox straight through its
 * envd stand-in (podIP:port, the sandbox's token; 10 s): the read's text, or "" after a write.
 */
export async function envdFile(
  sandbox: Reached,
  port: number,
  path: string,
  content?: string,
): Promise<string> {
  if (!sandbox.podIP || !sandbox.access?.envdAccessToken)
    throw new Error(`the sandbox's answer has no podIP or envd token: ${JSON.stringify(sandbox)}`);
  const url = `http://${sandbox.podIP}:${port}/files?path=${encodeURIComponent(path)}`;
  const res = await fetch(url, {
    method: content === undefined ? "GET" : "POST",
    headers: {
      "X-Access-Token": sandbox.access.envdAccessToken,
      ...(content === undefined ? {} : { "content-type": "application/octet-stream" }),
    },
    ...(content === undefined ? {} : { body: content }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (res.status !== 200)
    throw new Error(`envd ${content === undefined ? "GET" : "POST"} ${path}: ${res.status} ${text}`);
  return content === undefined ? text : "";
}
