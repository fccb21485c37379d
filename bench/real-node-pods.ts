// What `npm run bench:real` (bench/real.ts) needs of the real node: a watch of the bench's pods
// that says when one reached a state, a fresh pod on the real node (the pod-per-claim baseline),
// the first answer of envd inside a container, and an image removed from containerd (so the next
// fresh pod pulls it from the registry).
import { execFile } from "node:child_process";
import { request } from "node:http";
import { promisify } from "node:util";
import type { KubeConfig, V1Pod } from "@kubernetes/client-node";
import { REAL_NODE_PLACEMENT } from "../infra/cluster/real-node/kubelet-config.ts";
import { ENVD_PORT } from "../lib/data-plane/sandbox-host.ts";
import { type Following, follow } from "./follow.ts";

const execFileAsync = promisify(execFile);

/** onRealNode is the pod spec part that puts a pod on the real node (selected and tolerated). */
export const onRealNode = { ...REAL_NODE_PLACEMENT, automountServiceAccountToken: false };

/** SANDBOX_RESOURCES are the sandbox container's requests, the same for pool and fresh pods. */
export const SANDBOX_RESOURCES = { requests: { cpu: "50m", memory: "64Mi" } };

/** isReady says whether a pod's Ready condition is True. */
export function isReady(pod: V1Pod | undefined): boolean {
  return pod?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

interface Waiter {
  name: string;
  test: (pod: V1Pod | undefined) => boolean;
  resolve: (at: number) => void;
}

/**
 * PodWatch follows one namespace's pods (one list and watch, no polling) and resolves `until`
 * at the moment an event shows the pod in the wanted state: the bench's clock for "Ready" and
 * "Idle again", read as a user's watch would see them.
 */
export class PodWatch {
  private readonly pods = new Map<string, V1Pod>();
  private waiters: Waiter[] = [];
  private following: Following | undefined;

  static async start(kc: KubeConfig, ns: string): Promise<PodWatch> {
    const w = new PodWatch();
    w.following = await follow(
      kc,
      `/api/v1/namespaces/${ns}/pods`,
      undefined,
      (items: V1Pod[]) => {
        w.pods.clear();
        for (const pod of items) w.pods.set(pod.metadata?.name ?? "", pod);
        w.check();
      },
      (type, pod: V1Pod) => {
        const name = pod.metadata?.name ?? "";
        if (type === "DELETED") w.pods.delete(name);
        else w.pods.set(name, pod);
        w.check();
      },
    );
    return w;
  }

  /** pod is the latest state the watch saw of a pod (undefined once deleted). */
  pod(name: string): V1Pod | undefined {
    return this.pods.get(name);
  }

  /**
   * until resolves with performance.now() once the named pod passes test (at once if it does).
   * Callers start it before the write they time and await it after; it is marked handled here,
   * so a timeout while that write is awaited is not an unhandled rejection (the await still throws).
   */
  until(name: string, test: (pod: V1Pod | undefined) => boolean, timeoutMs: number, what: string) {
    const reached = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== waiter);
        const phase = this.pods.get(name)?.status?.phase ?? "gone";
        reject(new Error(`${name}: not ${what} within ${timeoutMs} ms (pod phase ${phase})`));
      }, timeoutMs);
      const waiter: Waiter = {
        name,
        test,
        resolve: (at) => {
          clearTimeout(timer);
          resolve(at);
        },
      };
      this.waiters.push(waiter);
      this.check();
    });
    reached.catch(() => {});
    return reached;
  }

  stop(): void {
    this.following?.stop();
  }

  private check(): void {
    const now = performance.now();
    const done = this.waiters.filter((w) => w.test(this.pods.get(w.name)));
    if (done.length === 0) return;
    this.waiters = this.waiters.filter((w) => !done.includes(w));
    for (const w of done) w.resolve(now);
  }
}

/**
 * freshPod is what a pod-per-claim system creates for each sandbox: one pod of the sandbox image
 * on the real node, with the pool pods' requests; `pull` makes the kubelet ask the registry.
 */
export function freshPod(name: string, image: string, pull: "Always" | "IfNotPresent"): V1Pod {
  return {
    metadata: { name, labels: { "bench.agentbox/fresh": "true" } },
    spec: {
      ...onRealNode,
      containers: [{ name: "sandbox", image, imagePullPolicy: pull, resources: SANDBOX_RESOURCES }],
    },
  };
}

/** healthOnce asks envd's /health once (204 when it serves), bounded by timeoutMs. */
function healthOnce(ip: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: ip, port: ENVD_PORT, path: "/health", timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode === 204);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(false));
    req.end();
  });
}

/**
 * envdAnswers polls envd's /health inside a pod every 10 ms (the pod's IP from ipOf, which may
 * not be known yet) and resolves with performance.now() at its first 204: when a user's first
 * command could be served.
 */
export async function envdAnswers(ipOf: () => string | undefined, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const ip = ipOf();
    if (ip && (await healthOnce(ip, 1000))) return performance.now();
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`envd did not answer within ${timeoutMs} ms (pod IP ${ipOf() ?? "none"})`);
}

/** Containerd reaches the real node's containerd with its ctr, in the kubelet's namespace. */
export interface Containerd {
  ctr: string;
  socket: string;
}

const ctr = async (c: Containerd, args: string[]) =>
  (await execFileAsync(c.ctr, ["--address", c.socket, "-n", "k8s.io", ...args], { timeout: 60_000 })).stdout;

/**
 * removeImage deletes every name containerd keeps for an image (its tag, its digest and its
 * config id, all pointing at the same manifest) and collects its content at once (--sync), so the
 * next pod that wants it downloads it from the registry again. Layers that running containers
 * still use stay unpacked (containerd keeps the snapshots they stand on). Returns the names
 * removed.
 */
export async function removeImage(c: Containerd, ref: string): Promise<string[]> {
  const rows = (await ctr(c, ["images", "ls"])).split("\n").slice(1);
  const fields = rows.map((r) => r.trim().split(/\s+/)).filter((f) => f.length >= 3);
  const digest = fields.find((f) => f[0] === ref)?.[2];
  if (!digest) return [];
  const refs = fields.filter((f) => f[2] === digest).map((f) => f[0] ?? "");
  await ctr(c, ["images", "rm", "--sync", ...refs]);
  return refs;
}
