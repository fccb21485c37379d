import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { getCACertificates, setDefaultCACertificates } from "node:tls";
import type { V1Pod } from "@kubernetes/client-node";
import { type ConnectionOpts, Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readState } from "../../infra/cluster/state.ts";
import { SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import { kube, until } from "./support/kube.ts";
import { realNode, realPoolSpec } from "./support/real-node.ts";
import { isReady, POOLS, phaseOf } from "./support/steps.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// Issue #39's proof on the real node: the official e2b SDK, unmodified, pauses a sandbox running
// in a real container (the node's snapshot agent commits its writable layer with containerd and
// pushes it to the cluster's registry), its pod goes back to the pool, and `Sandbox.connect`
// resumes it on a pod running the snapshot image: the same id, the same files, a new envd token.
// Then the registry stopped (SIGSTOP) during a pause: the pause fails naming the registry and the
// sandbox runs on untouched. The SDK runs in this worker: the test CA is added to Node's default
// CAs (this file's process only), and its options aim it at the test host and its router.

const { cluster, custom } = kube();
const t = tenantPool("rn-pause", "research", 2, realPoolSpec(2));
const template = () => `${t.ns}/p`;
const sdk = (): ConnectionOpts => ({
  apiKey: t.key,
  apiUrl: `https://127.0.0.1:${cluster.hostPort}/e2b`,
  sandboxUrl: `http://127.0.0.1:${cluster.dataPlanePort}`,
  requestTimeoutMs: 60_000,
});
const TEXT = "written before the pause\n";
const NESTED = "/home/user/made/by/the-sdk/nested.txt";
/** stoppedRegistry is the registry's pid while this file holds it stopped (SIGCONT in afterAll too). */
let stoppedRegistry: number | undefined;

beforeAll(async () => {
  setDefaultCACertificates([...getCACertificates("default"), readFileSync(cluster.caCert, "utf8")]);
  const pods = await until("2 idle pods on the real node", 240_000, async () => {
    const ps = await t.pods();
    return ps.length === 2 && ps.every((p) => phaseOf(p) === "idle" && isReady(p)) && ps;
  });
  for (const pod of pods) expect(pod.spec?.nodeName).toBe(realNode().name);
}, 300_000);
afterAll(() => continueRegistry());

/** continueRegistry lets the registry run again if this file stopped it. */
function continueRegistry(): void {
  if (stoppedRegistry !== undefined) process.kill(stoppedRegistry, "SIGCONT");
  stoppedRegistry = undefined;
}

/** registryPid is the real node's registry process (the cluster's state), checked by its command line. */
function registryPid(): number {
  const p = readState(cluster.name)?.processes.find((x) => x.name === "registry");
  if (!p) throw new Error(`cluster ${cluster.name} records no registry process`);
  const cmdline = readFileSync(`/proc/${p.pid}/cmdline`, "utf8");
  if (!cmdline.includes("docker-registry")) throw new Error(`pid ${p.pid} is not the registry: ${cmdline}`);
  return p.pid;
}

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const tokenOf = (s: Sandbox) => (s as unknown as { envdAccessToken?: string }).envdAccessToken;
const snapshotOf = (id: string): Promise<SandboxSnapshot | undefined> =>
  t.deps.kube.getSnapshot(t.ns, id).catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
const carrier = async (id: string): Promise<V1Pod | undefined> =>
  (await t.pods()).find(
    (p) => p.metadata?.labels?.[SANDBOX_ID_LABEL] === id && !p.metadata?.deletionTimestamp,
  );
/** poolIdle is the pool's status.idleReplicas. */
const poolIdle = async () =>
  (
    (await custom.getNamespacedCustomObject({ ...POOLS, namespace: t.ns, name: "p" })) as {
      status?: { idleReplicas?: number };
    }
  ).status?.idleReplicas;
const snapshotGone = (id: string) =>
  until(`the snapshot of ${id} gone`, 60_000, async () => ((await snapshotOf(id)) ? undefined : true));

/** manifestStatus is the registry's answer to a GET of a manifest (by digest). */
async function manifestStatus(image: string): Promise<number> {
  const at = image.indexOf("@");
  const repository = image.slice(image.indexOf("/") + 1, image.lastIndexOf(":", at));
  const res = await fetch(
    `http://127.0.0.1:${realNode().registryPort}/v2/${repository}/manifests/${image.slice(at + 1)}`,
    {
      headers: { accept: "application/vnd.oci.image.manifest.v1+json" },
      signal: AbortSignal.timeout(10_000),
    },
  );
  await res.body?.cancel();
  return res.status;
}

/** timed runs `call` and prints how long it took (figures for the closing note, never asserted). */
async function timed<T>(what: string, call: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await call();
  console.log(`${what}: ${Math.round(performance.now() - started)} ms`);
  return result;
}

describe("pause and resume through the e2b SDK on the real node", () => {
  it("keeps the id and the files across a pause, gives the pod back, and a resume gets a new token", async () => {
    const sbx = await Sandbox.create(template(), { ...sdk(), timeoutMs: 600_000 });
    const id = sbx.sandboxId;
    const createdToken = tokenOf(sbx);
    expect(createdToken).toBeTruthy();
    const blob = new Uint8Array(randomBytes(1 << 20));
    await sbx.files.write("/home/user/note.txt", TEXT);
    await sbx.files.write("/home/user/blob.bin", blob.buffer);
    await sbx.files.write(NESTED, "in a directory made by the write\n");
    // The sandbox's user (uid 1000) may not delete the image's files (/etc is root's): no whiteout here.
    const rm = await sbx.commands.run("rm /etc/agentbox-image").then(
      () => "removed",
      (e: unknown) => String((e as { stderr?: string }).stderr),
    );
    expect(rm).toMatch(/Permission denied/);

    const pod = await carrier(id);
    const podName = pod?.metadata?.name;
    expect(podName).toBeTruthy();
    const idleBefore = await until("the pool's status counts one idle pod", 60_000, async () =>
      (await poolIdle()) === 1 ? 1 : undefined,
    );
    expect(await timed("pause (betaPause, 1 MiB of changes)", () => sbx.betaPause())).toBe(true);

    // The pod went back to the pool: idle, carrying no sandbox, and the pool counts it.
    await until("the paused sandbox's pod idle again", 60_000, async () => {
      const p = (await t.pods()).find((x) => x.metadata?.name === podName);
      return p && phaseOf(p) === "idle" && !p.metadata?.labels?.[SANDBOX_ID_LABEL] ? true : undefined;
    });
    await until("the pool's status counts one more idle pod", 60_000, async () =>
      (await poolIdle()) === idleBefore + 1 ? true : undefined,
    );
    expect(await carrier(id)).toBeUndefined();
    expect((await Sandbox.getInfo(id, sdk())).state).toBe("paused");
    const snapshot = await snapshotOf(id);
    expect(snapshot?.status?.phase).toBe(SNAPSHOT_PHASE.PAUSED);
    const image = snapshot?.status?.images?.sandbox ?? "";
    expect(image).toMatch(
      new RegExp(
        `^registry\\.agentbox\\.test/agentbox-snapshots/${t.ns}/${id}/sandbox:g1@sha256:[0-9a-f]{64}$`,
      ),
    );
    expect(await manifestStatus(image)).toBe(200);
    console.log(`snapshot ${image}, ${snapshot?.status?.bytes} bytes`);

    const back = await timed("resume (Sandbox.connect of the paused sandbox)", () =>
      Sandbox.connect(id, sdk()),
    );
    expect(back.sandboxId).toBe(id);
    expect(tokenOf(back)).toBeTruthy();
    expect(tokenOf(back)).not.toBe(createdToken);
    // It runs on a pod of the pool whose sandbox container runs the snapshot image.
    const resumedOn = await carrier(id);
    const status = resumedOn?.status?.containerStatuses?.find((c) => c.name === "sandbox");
    expect(status?.imageID).toBe(image.replace(/:g1@/, "@"));
    expect(await back.files.read("/home/user/note.txt")).toBe(TEXT);
    const read = await back.files.read("/home/user/blob.bin", { format: "bytes" });
    expect(sha256(read)).toBe(sha256(blob));
    expect(await back.files.read(NESTED)).toBe("in a directory made by the write\n");
    const ran = await back.commands.run("cat note.txt; sha256sum blob.bin; cat /etc/agentbox-image; id -u");
    expect(ran.stdout).toBe(`${TEXT}${sha256(blob)}  blob.bin\nsandbox-a\n1000\n`);
    expect((await Sandbox.getInfo(id, sdk())).state).toBe("running");

    expect(await back.kill()).toBe(true);
    expect(
      await Sandbox.getInfo(id, sdk()).then(
        (i) => i.state,
        (e: Error) => e.name,
      ),
    ).toBe("SandboxNotFoundError");
    // The snapshot went with it, its finalizer removed once the agent deleted the image.
    await snapshotGone(id);
    expect(await manifestStatus(image)).toBe(404);
  }, 300_000);

  it("fails a pause with the registry stopped, naming it; the sandbox runs on, and pauses once it is back", async () => {
    await until("the pool's pods idle", 120_000, async () => {
      const ps = await t.pods();
      return ps.length === 2 && ps.every((p) => phaseOf(p) === "idle" && isReady(p)) ? true : undefined;
    });
    const sbx = await Sandbox.create(template(), { ...sdk(), timeoutMs: 600_000 });
    const id = sbx.sandboxId;
    const text = "written while the registry is down\n";
    await sbx.files.write("/home/user/kept.txt", text);
    const pod = await carrier(id);
    stoppedRegistry = registryPid();
    process.kill(stoppedRegistry, "SIGSTOP");
    try {
      const failure = await timed("a pause with the registry stopped (fails)", () =>
        sbx.betaPause().then(
          () => undefined,
          (e: unknown) => e as Error,
        ),
      );
      console.log(`the pause's error: ${failure?.name}: ${failure?.message}`);
      expect(failure?.message).toMatch(/registry\.agentbox\.test/);
      expect(failure?.message).toMatch(/keeps running/);
      // Still running on the same pod, its files intact, and no snapshot left behind.
      expect((await Sandbox.getInfo(id, sdk())).state).toBe("running");
      expect((await carrier(id))?.metadata?.uid).toBe(pod?.metadata?.uid);
      expect((await sbx.commands.run("cat kept.txt")).stdout).toBe(text);
      await snapshotGone(id);
    } finally {
      continueRegistry();
    }

    expect(await timed("a pause once the registry is back", () => sbx.betaPause())).toBe(true);
    expect((await Sandbox.getInfo(id, sdk())).state).toBe("paused");
    const back = await timed("its resume", () => Sandbox.connect(id, sdk()));
    expect(await back.files.read("/home/user/kept.txt")).toBe(text);
    expect(await Sandbox.kill(id, sdk())).toBe(true);
    await snapshotGone(id);
  }, 300_000);
});
