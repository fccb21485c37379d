import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { hostname } from "node:os";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConnectProxy, httpsViaProxy, startConnectProxy } from "./support/connect-proxy.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, until } from "./support/kube.ts";
import { REAL_IMAGES, realNode, realPoolSpec, WEB_PAGE } from "./support/real-node.ts";
import { routerGet } from "./support/router-get.ts";
import { TEST_SANDBOX_DOMAIN } from "./support/sandbox-domain.ts";
import { runSdkScript } from "./support/sdk-script.ts";
import { isReady, phaseOf } from "./support/steps.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// The official e2b SDK, unmodified, through the test host's router to envd INSIDE a real
// container (kubelet, containerd, runc on the real node), on sandboxes created through the E2B
// API: by header routing on the router's plain listener (E2B_SANDBOX_URL) and by host routing over
// TLS (`https://49983-<id>.<domain>` through the SDK's own proxy option, as data-plane-tls does).
// What the SDK reports is checked against what Kubernetes and the host's kernel say of the pod:
// its name, its UID and container ID in the cgroup path, its processes' view of the file.

const { cluster } = kube();
// Two sandboxes of sandbox-a (one per transport) and one of the web image, held to the end.
const sdkPool = tenantPool("rn-sdk", "research", 2, realPoolSpec(2));
const webPool = tenantPool("rn-web", "research", 1, realPoolSpec(1, { image: REAL_IMAGES.web }));
const api = `127.0.0.1:${cluster.hostPort}`;
const suffix = `.${TEST_SANDBOX_DOMAIN}`;
const router = `http://127.0.0.1:${cluster.dataPlanePort}`;
let proxy: ConnectProxy;

/** idleOnRealNode waits until the pool's `replicas` pods are idle and Ready. */
const idleOnRealNode = (t: ReturnType<typeof tenantPool>, replicas: number) =>
  until(`${replicas} idle pods of ${t.ns}`, 240_000, async () => {
    const pods = await t.pods();
    return pods.length === replicas && pods.every((p) => phaseOf(p) === "idle" && isReady(p)) && pods;
  });

beforeAll(async () => {
  proxy = await startConnectProxy((host, port) => {
    if (host.endsWith(suffix) && port === 443) return { host: "127.0.0.1", port: cluster.dataPlaneTlsPort };
    if (`${host}:${port}` === api) return { host: "127.0.0.1", port: cluster.hostPort };
    return undefined;
  });
  const pods = await Promise.all([idleOnRealNode(sdkPool, 2), idleOnRealNode(webPool, 1)]);
  for (const pod of pods.flat()) expect(pod.spec?.nodeName).toBe(realNode().name);
}, 300_000);
afterAll(() => proxy?.close());

/** createSandbox creates a sandbox on `t`'s pool through the E2B API and finds its pod. */
async function createSandbox(t: ReturnType<typeof tenantPool>): Promise<{ id: string; pod: V1Pod }> {
  const res = await httpsRequest(`https://${api}/e2b/sandboxes`, cluster.caCert, {
    timeoutMs: 120_000,
    method: "POST",
    headers: { "content-type": "application/json", "X-API-KEY": t.key },
    body: JSON.stringify({ templateID: `${t.ns}/p` }),
  });
  expect(res.status, res.body).toBe(201);
  const { sandboxID } = JSON.parse(res.body) as { sandboxID: string };
  const pod = (await t.pods()).find(
    (p) => p.metadata?.labels?.["agentbox.navix.sh/sandbox-id"] === sandboxID,
  );
  if (!pod) throw new Error(`no pod of ${t.ns} carries sandbox ${sandboxID}`);
  return { id: sandboxID, pod };
}

/** flow runs e2b-real-node-flow.ts for the sandbox and parses the JSON line it printed last. */
async function flow(env: Record<string, string>, key: string): Promise<Record<string, unknown>> {
  const stdout = await runSdkScript("e2b-real-node-flow.ts", { E2B_API_KEY: key, ...env }, 150_000);
  const out = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
  expect(out.error).toBeUndefined();
  return out;
}

/** containerIdOf is the container ID the kubelet reports for the pod's sandbox container. */
function containerIdOf(pod: V1Pod): string {
  const status = pod.status?.containerStatuses?.find((c) => c.name === "sandbox");
  const id = /^containerd:\/\/([0-9a-f]{64})$/.exec(status?.containerID ?? "")?.[1];
  if (!id) throw new Error(`the sandbox container of ${pod.metadata?.name} has no containerd ID yet`);
  return id;
}

/**
 * expectInContainer checks that `id; hostname; cat /proc/1/cgroup` ran in the pod's sandbox
 * container as uid 1000, and answers the host directory of its pids cgroup.
 */
function expectInContainer(out: Record<string, unknown>, pod: V1Pod, image: string): string {
  const { stdout, exitCode } = out.identity as { stdout: string; exitCode: number };
  expect(exitCode).toBe(0);
  const [idLine, name, ...cgroups] = stdout.trim().split("\n");
  expect(idLine).toMatch(/^uid=1000\(user\) gid=1000\(user\)/);
  expect(name).toBe(pod.metadata?.name);
  expect(name).not.toBe(hostname());
  // cgroup v1 without a cgroup namespace: PID 1 of the container sits under the node's cgroup
  // root, in the kubepods tree of this pod's UID, in the cgroup named by this container's ID.
  const where = `/pod${pod.metadata?.uid}/${containerIdOf(pod)}`;
  const pids = cgroups.map((l) => /^\d+:pids:(\/.*)$/.exec(l)?.[1]).find(Boolean) ?? "";
  expect(pids.startsWith(`/${realNode().cgroupRoot}/kubepods/`)).toBe(true);
  expect(pids.endsWith(where)).toBe(true);
  expect(out.image).toBe(`${image}\n`);
  return `/sys/fs/cgroup/pids${pids}`;
}

/** expectFlow checks the stream, the exit code, stdin, the kill and the 1 MiB file. */
function expectFlow(out: Record<string, unknown>, cgroupDir: string): void {
  expect(out.stream).toEqual({ chunks: ["first\n", "second\n"], stdout: "first\nsecond\n" });
  expect(out.exit3).toEqual({ name: "CommandExitError", exitCode: 3, stderr: "oops\n" });
  expect(out.stdin).toBe("got hello through stdin as 1000\n");

  // The container's PID namespace: its PID 1 is the image's init, the sleeper runs as `user`,
  // and the kill left no sleeper behind.
  expect(out.psBeforeKill).toMatch(/^\s*1\s+\S+\s+.*agentbox-init/m);
  expect(out.psBeforeKill).toMatch(/^\s*\d+\s+user\s+sleep 600$/m);
  expect(out).toMatchObject({ listedSleeper: true, killed: true });
  expect(out.afterKill).toMatch(/^CommandExitError: signal: killed/);
  expect(out.psAfterKill).not.toMatch(/sleep 600/);

  const file = out.file as { size: number; equal: boolean; sha256: string; sha256sum: string; ls: string };
  const path = "/home/user/real-node/blob.bin";
  expect(file).toMatchObject({ size: 1 << 20, equal: true });
  expect(file.sha256sum).toBe(`${file.sha256}  ${path}\n`);
  expect(file.ls).toMatch(/^-rw-\S*\s+1\s+1000\s+1000\s+1048576\s/);
  // From the host's side, not through envd: the file is in the mount namespace of a process of
  // that very cgroup (the container's), with the same bytes and owner.
  const [pid] = readFileSync(`${cgroupDir}/cgroup.procs`, "utf8").trim().split("\n");
  const inside = `/proc/${pid}/root${path}`;
  expect(createHash("sha256").update(readFileSync(inside)).digest("hex")).toBe(file.sha256);
  expect(statSync(inside).uid).toBe(1000);
}

describe("the e2b SDK through the router to envd inside a real container", () => {
  it("runs commands in the container, streams, exits, and moves 1 MiB, by header routing", async () => {
    const { id, pod } = await createSandbox(sdkPool);
    const out = await flow({ E2B_SANDBOX_URL: router, E2B_TEST_SANDBOX: id }, sdkPool.key);
    expectFlow(out, expectInContainer(out, pod, "sandbox-a"));
  }, 180_000);

  it("does the same by host routing over TLS, every envd call by name", async () => {
    const { id, pod } = await createSandbox(sdkPool);
    const out = await flow({ E2B_TEST_PROXY: proxy.url, E2B_TEST_SANDBOX: id }, sdkPool.key);
    expectFlow(out, expectInContainer(out, pod, "sandbox-a"));
    expect(proxy.tunnels).toContain(`49983-${id}${suffix}:443`);
    expect(proxy.tunnels.filter((a) => a !== api && !a.endsWith(`${suffix}:443`))).toEqual([]);
    expect(proxy.refused).toEqual([]);
  }, 180_000);

  it("reaches the port the sandbox serves as 8080-<id>.<domain>, plain and over TLS", async () => {
    const { id, pod } = await createSandbox(webPool);
    const out = await flow({ E2B_SANDBOX_URL: router, E2B_TEST_SANDBOX: id, E2B_TEST_WEB: "1" }, webPool.key);
    expectInContainer(out, pod, "web");
    const host = `8080-${id}${suffix}`;
    expect(out.host8080).toBe(host);
    expect(WEB_PAGE).toMatch(/agentbox web image/);
    expect(out.local8080).toBe(WEB_PAGE);
    expect(await routerGet(cluster.dataPlanePort, host, "/")).toEqual({ status: 200, body: WEB_PAGE });
    const tls = await httpsViaProxy(proxy.url, `https://${host}/`, cluster.caCert);
    expect({ status: tls.status, body: tls.body }).toEqual({ status: 200, body: WEB_PAGE });
    // A port nothing listens on is the router's answer, not the page.
    expect((await routerGet(cluster.dataPlanePort, `8081-${id}${suffix}`, "/")).status).not.toBe(200);
  }, 180_000);
});
