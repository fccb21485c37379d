import type { V1ContainerStatus, V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kube, newNamespace, until, watchPodUntil } from "./support/kube.ts";
import { watchPodFrom } from "./support/pod-watch.ts";

// Each behaviour of the kwok kubelet simulation (infra/kwok/stages.yaml), observed through the
// real apiserver: the product never talks to kwok, only to the API, so that is what we check.

const { kc, core } = kube();
let ns: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ ns, cleanup } = await newNamespace(core, "kubelet"));
});
afterAll(async () => cleanup());

const status = (pod: V1Pod, name = "main"): V1ContainerStatus | undefined =>
  pod.status?.containerStatuses?.find((c) => c.name === name);
const ready = (pod: V1Pod) => pod.status?.conditions?.find((c) => c.type === "Ready")?.status;
const runningWith = (image: string) => (pod: V1Pod) =>
  status(pod)?.image === image && status(pod)?.state?.running !== undefined && ready(pod) === "True";

async function createPod(
  name: string,
  image: string,
  extra: { annotations?: Record<string, string>; finalizers?: string[] } = {},
) {
  return core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name, annotations: extra.annotations, finalizers: extra.finalizers },
      spec: { containers: [{ name: "main", image }] },
    },
  });
}

async function setImage(name: string, image: string) {
  await core.patchNamespacedPod({
    name,
    namespace: ns,
    body: [{ op: "replace", path: "/spec/containers/0/image", value: image }],
  });
}

describe("kwok kubelet simulation", () => {
  it("schedules a pod onto a kwok node and reports it Running/Ready with image, imageID and containerID", async () => {
    await createPod("start", "registry.local/sandbox/base:1.0");
    const pod = await watchPodUntil(
      kc,
      ns,
      "start",
      "Running",
      runningWith("registry.local/sandbox/base:1.0"),
    );
    expect(pod.spec?.nodeName).toMatch(/^kwok-node-\d+$/);
    expect(pod.status?.phase).toBe("Running");
    expect(pod.status?.podIP).toMatch(/^127\.32\./);
    const c = status(pod)!;
    expect(c.imageID).toMatch(/^registry\.local\/sandbox\/base@sha256:[0-9a-f]{64}$/);
    expect(c.containerID).toMatch(/^containerd:\/\/[0-9a-f]{64}$/);
    expect(c.restartCount).toBe(0);
    expect(c.ready).toBe(true);
  });

  it("honours the pull delay (per-pod annotation overrides the cluster default)", async () => {
    const t0 = Date.now();
    await createPod("slow", "registry.local/sandbox/base:1.0", {
      annotations: { "kwok.agentbox.dev/pull-delay": "1500ms" },
    });
    await watchPodUntil(kc, ns, "slow", "Running", runningWith("registry.local/sandbox/base:1.0"));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1500);
  });

  it("updates a running container's image in place: new image, imageID, containerID, restartCount+1", async () => {
    await createPod("inplace", "registry.local/sandbox/idle:1");
    const before = status(
      await watchPodUntil(kc, ns, "inplace", "Running", runningWith("registry.local/sandbox/idle:1")),
    )!;
    await setImage("inplace", "registry.local/sandbox/agent:2");
    const pod = await watchPodUntil(
      kc,
      ns,
      "inplace",
      "new image",
      runningWith("registry.local/sandbox/agent:2"),
    );
    const after = status(pod)!;
    expect(after.imageID).toMatch(/^registry\.local\/sandbox\/agent@sha256:[0-9a-f]{64}$/);
    expect(after.imageID).not.toBe(before.imageID);
    expect(after.containerID).not.toBe(before.containerID);
    expect(after.restartCount).toBe(before.restartCount + 1);
    expect(after.lastState?.terminated?.reason).toBe("Completed");
    expect(after.lastState?.terminated?.containerID).toBe(before.containerID);
    expect(pod.metadata?.uid).toBeDefined();

    // Back to the first image: the same digest as before, but a new container.
    await setImage("inplace", "registry.local/sandbox/idle:1");
    const back = status(
      await watchPodUntil(kc, ns, "inplace", "image back", runningWith("registry.local/sandbox/idle:1")),
    )!;
    expect(back.imageID).toBe(before.imageID);
    expect(back.containerID).not.toBe(before.containerID);
    expect(back.containerID).not.toBe(after.containerID);
    expect(back.restartCount).toBe(before.restartCount + 2);
  });

  it("reports a tag pinned to a digest as the tag, and restarts on a change to or from the pinned spelling", async () => {
    await createPod("tagpin", "registry.local/sandbox/idle:1");
    const before = status(
      await watchPodUntil(kc, ns, "tagpin", "Running", runningWith("registry.local/sandbox/idle:1")),
    )!;
    const digest = before.imageID!.split("@")[1]!;
    // As containerd: status.image is the tag, imageID the repository at the digest.
    await setImage("tagpin", `registry.local/sandbox/idle:1@${digest}`);
    const pinned = status(
      await watchPodUntil(
        kc,
        ns,
        "tagpin",
        "restarted on the pinned spelling",
        (p) =>
          status(p)?.containerID !== before.containerID && runningWith("registry.local/sandbox/idle:1")(p),
      ),
    )!;
    expect(pinned.imageID).toBe(`registry.local/sandbox/idle@${digest}`);
    expect(pinned.restartCount).toBe(before.restartCount + 1);
    await setImage("tagpin", "registry.local/sandbox/idle:1");
    const back = status(
      await watchPodUntil(
        kc,
        ns,
        "tagpin",
        "restarted on the tag",
        (p) =>
          status(p)?.containerID !== pinned.containerID && runningWith("registry.local/sandbox/idle:1")(p),
      ),
    )!;
    expect(back.restartCount).toBe(before.restartCount + 2);
    expect(back.containerID).not.toBe(before.containerID);
  });

  it("keeps a digest-pinned image's own digest in imageID", async () => {
    const digest = `sha256:${"ab".repeat(32)}`;
    await createPod("pinned", `registry.local/sandbox/base@${digest}`);
    const pod = await watchPodUntil(
      kc,
      ns,
      "pinned",
      "Running",
      runningWith(`registry.local/sandbox/base@${digest}`),
    );
    expect(status(pod)?.imageID).toBe(`registry.local/sandbox/base@${digest}`);
  });

  it("never starts an unpullable image: ErrImagePull, then ImagePullBackOff, Ready=False", async () => {
    await createPod("unpullable", "registry.invalid/unpullable:1");
    const pulling = await watchPodUntil(
      kc,
      ns,
      "unpullable",
      "ErrImagePull",
      (p) => status(p)?.state?.waiting?.reason === "ErrImagePull",
    );
    expect(ready(pulling)).toBe("False");
    expect(status(pulling)?.state?.waiting?.message).toContain("registry.invalid/unpullable:1");
    const backoff = await watchPodUntil(
      kc,
      ns,
      "unpullable",
      "ImagePullBackOff",
      (p) => status(p)?.state?.waiting?.reason === "ImagePullBackOff",
    );
    expect(ready(backoff)).toBe("False");
    expect(backoff.status?.phase).toBe("Pending");
  });

  it("fails an in-place change to an unpullable image and recovers when the image is changed back", async () => {
    await createPod("badupdate", "registry.local/sandbox/idle:1");
    const before = status(
      await watchPodUntil(kc, ns, "badupdate", "Running", runningWith("registry.local/sandbox/idle:1")),
    )!;
    await setImage("badupdate", "registry.invalid/unpullable:2");
    const failed = await watchPodUntil(
      kc,
      ns,
      "badupdate",
      "ImagePullBackOff",
      (p) => status(p)?.state?.waiting?.reason === "ImagePullBackOff",
    );
    expect(ready(failed)).toBe("False");
    // As kubelet: no new container exists, so the status keeps the old one's image and ids; the
    // image it failed to pull is named in the message.
    expect(status(failed)?.image).toBe("registry.local/sandbox/idle:1");
    expect(status(failed)?.imageID).toBe(before.imageID);
    expect(status(failed)?.containerID).toBe(before.containerID);
    expect(status(failed)?.restartCount).toBe(before.restartCount);
    expect(status(failed)?.lastState?.terminated?.containerID).toBe(before.containerID);
    expect(status(failed)?.state?.waiting?.message).toBe(
      'Back-off pulling image "registry.invalid/unpullable:2": ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image "registry.invalid/unpullable:2": failed to resolve image: registry.invalid/unpullable:2: not found',
    );
    await setImage("badupdate", "registry.local/sandbox/idle:1");
    const back = status(
      await watchPodUntil(kc, ns, "badupdate", "recovered", runningWith("registry.local/sandbox/idle:1")),
    )!;
    expect(back.imageID).toBe(before.imageID);
    expect(back.containerID).not.toBe(before.containerID);
  });

  it("OOM-kills a container on annotation: lastState OOMKilled/137, new containerID, restartCount+1, once", async () => {
    await createPod("oom", "registry.local/sandbox/agent:2");
    const before = status(
      await watchPodUntil(kc, ns, "oom", "Running", runningWith("registry.local/sandbox/agent:2")),
    )!;
    // First the container terminates, as kubelet reports it, then it restarts.
    const terminated = await watchPodFrom(kc, ns, "oom", "terminated OOMKilled", (p) => {
      return status(p)?.state?.terminated?.reason === "OOMKilled";
    });
    await core.patchNamespacedPod({
      name: "oom",
      namespace: ns,
      body: [{ op: "add", path: "/metadata/annotations", value: { "kwok.agentbox.dev/oom-kill": "main" } }],
    });
    const killed = (await terminated.result).pod;
    expect(status(killed)?.state?.terminated?.exitCode).toBe(137);
    expect(status(killed)?.state?.terminated?.containerID).toBe(before.containerID);
    expect(status(killed)?.ready).toBe(false);
    expect(ready(killed)).toBe("False");
    const pod = await watchPodUntil(
      kc,
      ns,
      "oom",
      "OOMKilled and annotation consumed",
      (p) =>
        status(p)?.lastState?.terminated?.reason === "OOMKilled" &&
        !p.metadata?.annotations?.["kwok.agentbox.dev/oom-kill"],
    );
    const after = status(pod)!;
    expect(after.lastState?.terminated?.exitCode).toBe(137);
    expect(after.lastState?.terminated?.containerID).toBe(before.containerID);
    expect(after.containerID).not.toBe(before.containerID);
    expect(after.restartCount).toBe(before.restartCount + 1);
    expect(after.imageID).toBe(before.imageID);
    expect(after.state?.running).toBeDefined();
  });

  it("deletes a terminating pod only once its finalizers are gone", async () => {
    await createPod("guarded", "registry.local/sandbox/base:1.0", {
      finalizers: ["agentbox.navix.sh/sandbox-protection"],
    });
    await createPod("unguarded", "registry.local/sandbox/base:1.0");
    await watchPodUntil(kc, ns, "guarded", "Running", runningWith("registry.local/sandbox/base:1.0"));
    await watchPodUntil(kc, ns, "unguarded", "Running", runningWith("registry.local/sandbox/base:1.0"));
    await core.deleteNamespacedPod({ name: "guarded", namespace: ns });
    await core.deleteNamespacedPod({ name: "unguarded", namespace: ns });
    // The unguarded pod disappearing proves kwok has processed the deletions of this moment.
    await until("unguarded pod removed", 20_000, async () => {
      const pods = await core.listNamespacedPod({ namespace: ns, fieldSelector: "metadata.name=unguarded" });
      return pods.items.length === 0;
    });
    const guarded = await core.readNamespacedPod({ name: "guarded", namespace: ns });
    expect(guarded.metadata?.deletionTimestamp).toBeDefined();
    await core.patchNamespacedPod({
      name: "guarded",
      namespace: ns,
      body: [{ op: "remove", path: "/metadata/finalizers" }],
    });
    await until("guarded pod removed", 20_000, async () => {
      const pods = await core.listNamespacedPod({ namespace: ns, fieldSelector: "metadata.name=guarded" });
      return pods.items.length === 0;
    });
  });
});
