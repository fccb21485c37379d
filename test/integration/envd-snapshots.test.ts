import { randomBytes } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CommitRequest } from "../../functions/snapshots/committer.ts";
import { type StartedEnvd, startEnvd } from "../../infra/dev/envd/server.ts";
import { IMAGE_REGISTRY } from "../../infra/images/refs.ts";
import { snapshotTarget } from "../../lib/snapshots/image-names.ts";
import { kube, newNamespace, until, watchPodUntil } from "./support/kube.ts";

// Issue #39 on kwok: no runtime to commit, so the envd stand-in's directory of a pod is what a
// snapshot holds. Files are written through the official e2b SDK into one pod's sandbox, the
// stand-in's committer commits them, and another pod whose sandbox container is swapped in place
// to the snapshot image (a resume's claim) meets them; a removed snapshot restores nothing, and
// a pod whose container changed since is not committed. The stand-in here is this file's own
// (on its own port, reading the cluster's real pods), so its store and log are the test's.

const { core, kc } = kube();
let ns = "";
let envd: StartedEnvd;
const logged: string[] = [];
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  const created = await newNamespace(core, "envd-snap");
  ns = created.ns;
  cleanups.push(created.cleanup);
  envd = await startEnvd({ kubeconfig: kc, log: (line) => logged.push(line) });
  cleanups.push(() => new Promise<void>((done) => envd.server.close(() => done())));
});
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const running = (image: string, not?: string) => (p: V1Pod) => {
  const s = p.status?.containerStatuses?.[0];
  return (
    p.status?.phase === "Running" &&
    !!p.status.podIP &&
    !!s?.state?.running &&
    !!s.containerID &&
    s.containerID !== not &&
    p.spec?.containers?.[0]?.image === image
  );
};

/** pod creates a one-container pod on a kwok node and waits for it Running with an IP. */
async function pod(name: string, image: string): Promise<V1Pod> {
  await core.createNamespacedPod({
    namespace: ns,
    body: { metadata: { name }, spec: { containers: [{ name: "main", image }] } },
  });
  return watchPodUntil(kc, ns, name, `Running ${image}`, running(image), 60_000);
}

/** swap changes the pod's container image in place (a claim's swap) and waits for the new container. */
async function swap(p: V1Pod, image: string): Promise<V1Pod> {
  const name = p.metadata?.name ?? "";
  await core.patchNamespacedPod({
    name,
    namespace: ns,
    body: [{ op: "replace", path: "/spec/containers/0/image", value: image }],
  });
  const before = p.status?.containerStatuses?.[0]?.containerID;
  return watchPodUntil(kc, ns, name, `a new container of ${image}`, running(image, before), 60_000);
}

/** init gives the pod's envd a token (as a claim's post-start hook does) and answers an SDK aimed at it. */
async function sdk(p: V1Pod): Promise<Sandbox> {
  const url = `http://${p.status?.podIP}:${envd.port}`;
  const token = randomBytes(12).toString("hex");
  const res = await fetch(`${url}/init`, {
    method: "POST",
    body: JSON.stringify({ accessToken: token, envVars: {} }),
    signal: AbortSignal.timeout(10_000),
  });
  expect(res.status).toBe(204);
  // The SDK's own constructor (what Sandbox.connect builds), its envd calls aimed at the pod.
  const Ctor = Sandbox as unknown as new (opts: Record<string, unknown>) => Sandbox;
  return new Ctor({
    sandboxId: p.metadata?.name,
    envdAccessToken: token,
    envdVersion: "0.5.7",
    sandboxUrl: url,
  });
}

/** request is the commit the snapshot agent asks for the pod's container, to generation's tag. */
function request(p: V1Pod, sandboxId: string, generation: number): CommitRequest {
  const s = p.status?.containerStatuses?.[0];
  const container = { name: "main", containerID: s?.containerID ?? "", image: s?.imageID ?? "" };
  return {
    namespace: ns,
    sandboxId,
    source: {
      node: p.spec?.nodeName ?? "",
      pod: p.metadata?.name ?? "",
      podUID: p.metadata?.uid ?? "",
      podIP: p.status?.podIP ?? "",
      containers: [container],
    },
    container,
    target: snapshotTarget(IMAGE_REGISTRY, ns, sandboxId, "main", generation),
    created: "2026-12-02T10:00:00Z",
  };
}

const signal = () => AbortSignal.timeout(30_000);
const BASE = "registry.local/sandbox/base:1";

describe("snapshots on the envd stand-in, through the official e2b SDK", () => {
  it("a pod swapped to the snapshot image meets the files written before, and none of its own", async () => {
    const a = await pod("a", BASE);
    const onA = await sdk(a);
    await onA.files.write("/home/user/notes/hello.txt", "hello, snapshot\n");
    const blob = new Uint8Array(256 << 10).map((_, i) => (i * 31) & 255);
    await onA.files.write("/home/user/data/blob.bin", blob.buffer);
    // Commands run on the host in the sandbox's home (the stand-in is no container): relative paths.
    await onA.commands.run("mkdir -p deep/er && echo built > deep/er/out.txt");
    const done = await envd.committer.commit(request(a, "sbx1", 1), signal());
    expect(done.image).toMatch(
      new RegExp(`^${IMAGE_REGISTRY}/agentbox-snapshots/${ns}/sbx1/main:g1@sha256:[0-9a-f]{64}$`),
    );
    expect(done.bytes).toBe("hello, snapshot\n".length + blob.length + "built\n".length);

    // Another pod, first a sandbox of its own, then swapped to the snapshot: its next envd holds a's files.
    const b = await pod("b", BASE);
    await (await sdk(b)).files.write("/home/user/planted.txt", "b's own");
    const resumed = await swap(b, done.image);
    expect(resumed.status?.podIP).not.toBe(a.status?.podIP);
    const onB = await sdk(resumed);
    expect(await onB.files.read("/home/user/notes/hello.txt")).toBe("hello, snapshot\n");
    const back = await onB.files.read("/home/user/data/blob.bin", { format: "bytes" });
    expect(Buffer.compare(Buffer.from(back), Buffer.from(blob))).toBe(0);
    expect((await onB.commands.run("cat deep/er/out.txt")).stdout).toBe("built\n");
    expect(await onB.files.exists("/home/user/planted.txt")).toBe(false);
    // The files are b's copy now: writing them leaves a's sandbox as it was.
    await onB.files.write("/home/user/notes/hello.txt", "b wrote this\n");
    expect(await onA.files.read("/home/user/notes/hello.txt")).toBe("hello, snapshot\n");

    // Removed: a pod that later runs the image starts empty, and the stand-in says so.
    await envd.committer.remove(done.image, signal());
    await envd.committer.remove(done.image, signal());
    const c = await pod("c", done.image);
    const onC = await sdk(c);
    expect(await onC.files.exists("/home/user/notes/hello.txt")).toBe(false);
    expect((await onC.files.list("/home/user")).map((e) => e.name)).toEqual([]);
    await until("the stand-in's log of the missing snapshot", 5_000, async () =>
      logged.some((l) => l.includes(`pod IP ${c.status?.podIP} runs snapshot image ${done.image}`)),
    );
  });

  it("a commit of a container that no longer serves its pod, or of a pod never served, fails clearly", async () => {
    const d = await pod("d", BASE);
    await (await sdk(d)).files.write("/home/user/secret.txt", "d's first sandbox");
    const before = request(d, "sbx2", 1);
    const restarted = await swap(d, "registry.local/sandbox/base:2");
    await expect(envd.committer.commit(before, signal())).rejects.toThrow(
      new RegExp(`container ${before.container.containerID} of pod ${ns}/d is gone`),
    );
    // Its new container, once served, commits (and is the one a request names now).
    await sdk(restarted);
    const now = await envd.committer.commit(request(restarted, "sbx2", 2), signal());
    expect(now.bytes).toBe(0);
    const e = await pod("e", BASE);
    await expect(envd.committer.commit(request(e, "sbx3", 1), signal())).rejects.toThrow(
      new RegExp(
        `container .* of pod ${ns}/e is gone: the envd stand-in never served pod IP ${e.status?.podIP}`,
      ),
    );
  });
});
