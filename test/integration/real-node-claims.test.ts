import { type V1ContainerStatus, type V1Pod, Watch } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { INPLACE_UPDATE_STATE_ANNOTATION } from "../../lib/crd/keys.ts";
import { normalizeImage } from "../../lib/lifecycle/image-reference.ts";
import { inProcessApi, postCreate, tenantKey } from "./support/in-process-api.ts";
import { kube } from "./support/kube.ts";
import { envdAt, envdRun } from "./support/real-envd.ts";
import { REAL_IMAGES, realNode, realPoolSpec } from "./support/real-node.ts";
import { isReady, phaseOf, poolTest, reconcileUntil } from "./support/steps.ts";

// Issue #36, section 3: a claim by in-place swap on the REAL node (kubelet, containerd, runc).
// Completion is judged from what the real kubelet reports (status.image as containerd names it,
// imageID `<repo>@sha256:…` digests, `containerd://…` containerIDs), and the API answers Running
// only once the sandbox's container runs the image: every version of the pod the watch delivers
// with the running phase shows it, and inside the container /etc/agentbox-image says so.

const { kc, cluster } = kube();
const t = poolTest("rn-claims");
const { deps, app } = inProcessApi(t.deps);
let key = "";
/** digests are the registry's manifest digests of the images, by image reference. */
const digests = new Map<string, string>();

const REPO_DIGEST = /^registry\.agentbox\.test\/agentbox\/([a-z-]+)@(sha256:[0-9a-f]{64})$/;
const CONTAINER_ID = /^containerd:\/\/[0-9a-f]{64}$/;

/** registryDigest asks the node's local registry for the digest a tag names. */
async function registryDigest(image: string): Promise<string> {
  const [repo, tag] = image.replace("registry.agentbox.test/", "").split(":");
  const res = await fetch(`http://127.0.0.1:${realNode().registryPort}/v2/${repo}/manifests/${tag}`, {
    method: "HEAD",
    headers: {
      accept:
        "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json",
    },
    signal: AbortSignal.timeout(10_000),
  });
  const digest = res.headers.get("docker-content-digest");
  if (res.status !== 200 || !digest) throw new Error(`registry: ${image} answered ${res.status}`);
  return digest;
}

const sandboxStatus = (pod: V1Pod): V1ContainerStatus | undefined =>
  pod.status?.containerStatuses?.find((s) => s.name === "sandbox");

/** readyRealPool creates a one-pod pool on the real node and reconciles until its pod is idle. */
async function readyRealPool(name: string, spec: Record<string, unknown>): Promise<V1Pod> {
  await t.createPool(name, 1, spec);
  return reconcileUntil(
    deps,
    t.ns,
    name,
    `the idle pod of ${name} on the real node`,
    async () => {
      const [pod] = await t.pods(name);
      return pod && phaseOf(pod) === "idle" && isReady(pod) ? pod : undefined;
    },
    180_000,
  );
}

/** recordVersions keeps every version of one pod a watch delivers until `stop`. */
async function recordVersions(name: string) {
  const versions: V1Pod[] = [];
  const req = await new Watch(kc).watch(
    `/api/v1/namespaces/${t.ns}/pods`,
    { fieldSelector: `metadata.name=${name}` },
    (_type, pod: V1Pod) => versions.push(pod),
    () => {},
  );
  return {
    versions,
    stop: async () => {
      // The last writes (the claim's completion) reach the watch a moment after the API answered.
      await new Promise((r) => setTimeout(r, 500));
      req.abort();
    },
  };
}

/** claim creates a sandbox in `pool` through /v1, waiting until it runs, and times it. */
async function claim(pool: string) {
  const started = performance.now();
  const res = await postCreate(app, key, { pool: `${t.ns}/${pool}`, wait: true, waitTimeout: 120 });
  const ms = Math.round(performance.now() - started);
  const body = (await res.json()) as {
    sandboxId: string;
    pod: string;
    phase: string;
    access?: { envdAccessToken?: string };
  };
  expect(res.status, JSON.stringify(body)).toBe(201);
  expect(body.phase).toBe("running");
  const pod = (await t.pods(pool)).find((p) => p.metadata?.name === body.pod);
  if (!pod) throw new Error(`pod ${body.pod} of ${body.sandboxId} is gone`);
  return { ...body, token: body.access?.envdAccessToken, pod, ms };
}

/** insideImage is what /etc/agentbox-image says inside the sandbox's container (through its envd). */
async function insideImage(pod: V1Pod, token: string | undefined): Promise<string> {
  if (!token) throw new Error("the create answered no envdAccessToken");
  const run = await envdRun(
    envdAt(pod.status?.podIP ?? "", cluster.envdPort, token),
    "cat /etc/agentbox-image",
  );
  expect(run.exitCode).toBe(0);
  return run.stdout.trim();
}

/**
 * expectRunsImage checks the running sandbox container of `pod` as the real kubelet reports it:
 * status.image names `image`, imageID is the registry's digest, the containerID is containerd's.
 */
function expectRunsImage(pod: V1Pod, image: string): V1ContainerStatus {
  const status = sandboxStatus(pod);
  expect(status?.state?.running, JSON.stringify(status)).toBeDefined();
  expect(normalizeImage(status?.image ?? "")).toBe(normalizeImage(image));
  const [, repo, digest] = REPO_DIGEST.exec(status?.imageID ?? "") ?? [];
  expect(repo, status?.imageID).toBe(image.split("/").at(-1)?.split(":")[0]);
  expect(digest).toBe(digests.get(image));
  expect(status?.containerID).toMatch(CONTAINER_ID);
  return status as V1ContainerStatus;
}

/**
 * expectRunningOnlyOnImage checks every watched version whose phase is running: the image runs
 * (in a new container, when the idle one is given). It returns how many versions said starting.
 */
function expectRunningOnlyOnImage(versions: V1Pod[], image: string, idleContainerID: string | undefined) {
  const running = versions.filter((p) => phaseOf(p) === "running");
  expect(running.length).toBeGreaterThan(0);
  for (const p of running) {
    const status = expectRunsImage(p, image);
    if (idleContainerID !== undefined) expect(status.containerID).not.toBe(idleContainerID);
  }
  // The swap shows in between: versions that still say starting while kubelet replaced the container.
  return versions.filter((p) => phaseOf(p) === "starting").length;
}

beforeAll(async () => {
  // envd in a real container listens 1-2 s after it starts (Node boots): the production
  // deadline (60 s) for its /init, not the test host's 3 s made for the always-up stand-in.
  if (deps.postStart) deps.postStart.deadlineSeconds = 60;
  key = await tenantKey(deps, "rn-claims");
  for (const image of [REAL_IMAGES.idle, REAL_IMAGES.a, REAL_IMAGES.b])
    digests.set(image, await registryDigest(image));
}, 60_000);

describe("a claim on the real node", () => {
  it("swaps the idle image for sandbox-a in place and answers Running once sandbox-a runs", async () => {
    const idle = await readyRealPool("swap", realPoolSpec(1));
    const idleStatus = expectRunsImage(idle, REAL_IMAGES.idle);
    const watch = await recordVersions(idle.metadata?.name ?? "");
    const s = await claim("swap");
    await watch.stop();

    // The same pod, its sandbox container replaced by one on sandbox-a (the real kubelet's doing).
    expect(s.pod.metadata?.uid).toBe(idle.metadata?.uid);
    const status = expectRunsImage(s.pod, REAL_IMAGES.a);
    expect(status.containerID).not.toBe(idleStatus.containerID);
    expect(status.imageID).not.toBe(idleStatus.imageID);
    const state = JSON.parse(s.pod.metadata?.annotations?.[INPLACE_UPDATE_STATE_ANNOTATION] ?? "{}");
    expect(state).toMatchObject({
      phase: "completed",
      targetImages: { sandbox: REAL_IMAGES.a },
      stableContainerStatuses: { sandbox: { containerID: status.containerID } },
    });
    const starting = expectRunningOnlyOnImage(watch.versions, REAL_IMAGES.a, idleStatus.containerID);
    expect(await insideImage(s.pod, s.token)).toBe("sandbox-a");
    console.log(
      `[real-node-claims] swap idle→sandbox-a: claim → Running in ${s.ms} ms (${watch.versions.length} pod versions, ${starting} while starting)`,
    );
  }, 300_000);

  it("takes the one-write fast path on a pool without idleImage: the idle container already runs sandbox-a", async () => {
    const idle = await readyRealPool("fast", realPoolSpec(1, { idleImage: false }));
    const idleStatus = expectRunsImage(idle, REAL_IMAGES.a);
    const watch = await recordVersions(idle.metadata?.name ?? "");
    const s = await claim("fast");
    await watch.stop();

    // No restart: the container the idle pod ran (fresh, it never served) serves the sandbox.
    expect(s.pod.metadata?.uid).toBe(idle.metadata?.uid);
    const status = expectRunsImage(s.pod, REAL_IMAGES.a);
    expect(status.containerID).toBe(idleStatus.containerID);
    expect(status.restartCount).toBe(idleStatus.restartCount);
    expectRunningOnlyOnImage(watch.versions, REAL_IMAGES.a, undefined);
    expect(await insideImage(s.pod, s.token)).toBe("sandbox-a");
    console.log(`[real-node-claims] fast path on sandbox-a: claim → Running in ${s.ms} ms`);
  }, 300_000);

  it("swaps to sandbox-b on a pool whose template runs sandbox-b: another image, another digest", async () => {
    const idle = await readyRealPool("b", realPoolSpec(1, { image: REAL_IMAGES.b }));
    const idleStatus = expectRunsImage(idle, REAL_IMAGES.idle);
    const watch = await recordVersions(idle.metadata?.name ?? "");
    const s = await claim("b");
    await watch.stop();

    const status = expectRunsImage(s.pod, REAL_IMAGES.b);
    expect(status.containerID).not.toBe(idleStatus.containerID);
    expect(digests.get(REAL_IMAGES.b)).not.toBe(digests.get(REAL_IMAGES.a));
    expectRunningOnlyOnImage(watch.versions, REAL_IMAGES.b, idleStatus.containerID);
    expect(await insideImage(s.pod, s.token)).toBe("sandbox-b");
    console.log(`[real-node-claims] swap idle→sandbox-b: claim → Running in ${s.ms} ms`);
  }, 300_000);
});
