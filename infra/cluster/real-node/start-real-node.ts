import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import type { CoreV1Api } from "@kubernetes/client-node";
import { imageRef } from "../../images/refs.ts";
import type { Started } from "../processes.ts";
import { planRealNode, type RealNodeState } from "./real-node.ts";
import { startNodeSnapshotAgent } from "./snapshot-agent.ts";

const execFileAsync = promisify(execFile);

/** PublishImages puts the node's images into the registry at hostPort (infra/images). */
export type PublishImages = (registryHostPort: string) => Promise<void>;

/** RealNodeContext is what `up` lends the real node's start: its process runner and waits. */
export interface RealNodeContext {
  clusterDir: string;
  clusterName: string;
  leaseDir: string;
  nodeBinDir: string;
  server: string;
  caCert: string;
  nodeToken: string;
  /** agentToken authenticates the node's snapshot agent (snapshot-agent.ts). */
  agentToken: string;
  core: CoreV1Api;
  /** run starts a process recorded in the cluster's state (so `down` stops it). */
  run: (name: string, bin: string, args: string[]) => Started;
  /** wait waits for check while every started process runs (a death fails it at once). */
  wait: (what: string, check: () => Promise<boolean>, timeoutMs?: number) => Promise<void>;
  /** record saves the real node's state before its processes start, so a failed start is cleaned. */
  record: (node: RealNodeState) => void;
  publishImages: PublishImages;
  log: (line: string) => void;
}

/** SANDBOX_IMAGE is containerd's pod sandbox ("pause") image, built here (infra/images). */
export const SANDBOX_IMAGE = imageRef("pause");

/**
 * startRealNode brings up the real node beside the kwok nodes: the local registry, the images
 * pushed to it, containerd, then the kubelet, and waits until the Node is Ready; then the node's
 * snapshot agent.
 */
export async function startRealNode(ctx: RealNodeContext): Promise<RealNodeState> {
  const started = Date.now();
  const plan = await planRealNode({
    clusterDir: ctx.clusterDir,
    clusterName: ctx.clusterName,
    leaseDir: ctx.leaseDir,
    binDir: ctx.nodeBinDir,
    server: ctx.server,
    caCert: ctx.caCert,
    nodeToken: ctx.nodeToken,
    sandboxImage: SANDBOX_IMAGE,
  });
  const node = plan.state;
  ctx.record(node);
  ctx.log(
    `real node: pod network ${node.network.subnet} on ${node.network.bridge}, registry 127.0.0.1:${node.registryPort}`,
  );
  ctx.run("registry", plan.registry.bin, plan.registry.args);
  await ctx.wait("the local registry", async () => {
    const res = await fetch(`http://127.0.0.1:${node.registryPort}/v2/`, {
      signal: AbortSignal.timeout(2_000),
    });
    return res.ok;
  });
  // The images go up while containerd starts; both are awaited together, so a failed push is
  // never a rejection nobody observes.
  ctx.run("containerd", plan.containerd.bin, plan.containerd.args);
  await Promise.all([
    ctx.publishImages(`127.0.0.1:${node.registryPort}`),
    ctx.wait("containerd", async () => {
      if (!existsSync(node.containerdSocket)) return false;
      await execFileAsync(join(ctx.nodeBinDir, "ctr"), ["--address", node.containerdSocket, "version"], {
        timeout: 5_000,
      });
      return true;
    }),
  ]);
  ctx.run("kubelet", plan.kubelet.bin, plan.kubelet.args);
  await ctx.wait(
    `node ${node.name} Ready`,
    async () => {
      const n = await ctx.core.readNode({ name: node.name });
      return n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
    },
    180_000,
  );
  // The snapshot agent beside containerd (pause and resume): once the node runs pods to commit.
  await startNodeSnapshotAgent(ctx, node);
  ctx.log(`real node ${node.name} Ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return node;
}
