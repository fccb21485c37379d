import { createHash } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { containerdCommitter } from "../../functions/snapshots/containerd-committer.ts";
import { RegistryClient } from "../../functions/snapshots/registry-client.ts";
import { ctrDiff } from "../../hosts/node/ctr-diff.ts";
import { ensureNodeBinaries } from "../../infra/cluster/binaries.ts";
import { freePorts } from "../../infra/cluster/ports.ts";
import { IMAGE_REGISTRY } from "../../infra/images/refs.ts";
import type { SnapshotContainer, SnapshotSource } from "../../lib/crd/sandbox-snapshot.ts";
import { snapshotTarget } from "../../lib/snapshots/image-names.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { onRealNode, REAL_IMAGES, realNode } from "./support/real-node.ts";

// The real node's committer (ADR 0045) against the real containerd and the cluster's registry:
// a running container's changes (a 1 MiB file, a text file, a file of the image deleted) become
// an image one layer above the one it runs; a new pod on that image sees the files and not the
// deleted one (the whiteout); removing the image deletes its manifest; a container that is gone
// is a clear error.

const { core } = kube();
let ns: string;
let cleanup: () => Promise<void>;
let registryUrl: string;
let committer: ReturnType<typeof containerdCommitter>;
let committerOn: (registryUrl: string) => ReturnType<typeof containerdCommitter>;
/** CREATED dates the images, as a SandboxSnapshot's creationTimestamp does the agent's. */
const CREATED = "2026-12-02T10:00:00Z";
/** written is the writer pod's container, still running after the first case (the registry-down case commits it). */
let written: { source: SnapshotSource; container: SnapshotContainer } | undefined;

const WRITE = [
  "head -c 1048576 /dev/urandom > /home/user/big.bin",
  "md5sum /home/user/big.bin > /home/user/big.md5",
  "echo 'hello from before the pause' > /home/user/note.txt",
  "rm /etc/agentbox-image",
  "echo written",
  "exec sleep 3600",
].join(" && ");

const READ = [
  "cat /home/user/note.txt",
  "md5sum -c /home/user/big.md5",
  "echo size=$(wc -c < /home/user/big.bin)",
  "if [ -e /etc/agentbox-image ]; then echo marker=present; else echo marker=absent; fi",
  "grep -c '^user:' /etc/passwd",
].join("; ");

beforeAll(async () => {
  const node = realNode();
  ({ ns, cleanup } = await newNamespace(core, "snapcommit"));
  registryUrl = `http://127.0.0.1:${node.registryPort}`;
  const diff = ctrDiff({
    ctr: `${ensureNodeBinaries()}/ctr`,
    address: node.containerdSocket,
    tmpDir: node.dir,
  });
  committerOn = (url) =>
    containerdCommitter({
      diff,
      registry: new RegistryClient({ endpoints: { [IMAGE_REGISTRY]: url }, timeoutMs: 30_000 }),
    });
  committer = committerOn(registryUrl);
});
afterAll(async () => cleanup());

/** runPod creates a pod on the real node running `script` in sh on `image`, as root. */
async function runPod(name: string, image: string, script: string, restartPolicy: string) {
  await core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name },
      spec: {
        ...onRealNode,
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 1,
        restartPolicy,
        containers: [
          {
            name: "sandbox",
            image,
            command: ["/bin/sh", "-c", script],
            securityContext: { runAsUser: 0 },
            resources: { requests: { cpu: "10m", memory: "16Mi" } },
          },
        ],
      },
    },
  });
}

const logOf = async (name: string) =>
  String(await core.readNamespacedPodLog({ name, namespace: ns, container: "sandbox" }));

/** manifestStatus is the registry's status for GET of a manifest (by tag or digest). */
async function manifestStatus(repository: string, reference: string): Promise<number> {
  const res = await fetch(`${registryUrl}/v2/${repository}/manifests/${reference}`, {
    headers: { accept: "application/vnd.oci.image.manifest.v1+json" },
    signal: AbortSignal.timeout(10_000),
  });
  await res.body?.cancel();
  return res.status;
}

/** manifestOf reads an OCI manifest from the registry. */
async function manifestOf(repository: string, reference: string) {
  const res = await fetch(`${registryUrl}/v2/${repository}/manifests/${reference}`, {
    headers: { accept: "application/vnd.oci.image.manifest.v1+json" },
    signal: AbortSignal.timeout(10_000),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { layers: { mediaType: string; digest: string; size: number }[] };
}

describe("the containerd committer on the real node", () => {
  it("commits a running container's changes, a pod on the image sees them, remove deletes it", async () => {
    await runPod("writer", REAL_IMAGES.a, WRITE, "Never");
    const pod = await until("the writer's files written", 180_000, async () => {
      const p: V1Pod = await core.readNamespacedPod({ name: "writer", namespace: ns });
      return p.status?.phase === "Running" && /written/.test(await logOf("writer")) && p;
    });
    const status = pod.status?.containerStatuses?.find((c) => c.name === "sandbox");
    const container = {
      name: "sandbox",
      containerID: status?.containerID ?? "",
      image: status?.imageID || (status?.image ?? ""),
    };
    expect(container.containerID).toMatch(/^containerd:\/\//);
    expect(container.image).toMatch(/^registry\.agentbox\.test\/agentbox\/sandbox-a@sha256:/);
    const target = snapshotTarget(IMAGE_REGISTRY, ns, "sb-commit", "sandbox", 1);
    const source = {
      node: realNode().name,
      pod: "writer",
      podUID: pod.metadata?.uid ?? "",
      containers: [container],
    };

    written = { source, container };
    const started = performance.now();
    const request = { namespace: ns, sandboxId: "sb-commit", source, container, target, created: CREATED };
    const result = await committer.commit(request, AbortSignal.timeout(120_000));
    const ms = Math.round(performance.now() - started);
    console.log(`commit of a 1 MiB change: ${ms} ms, layer ${result.bytes} bytes, ${result.image}`);

    expect(result.image).toMatch(new RegExp(`^${target.replace(/[.]/g, "\\.")}@sha256:[0-9a-f]{64}$`));
    expect(result.bytes).toBeGreaterThan(1024 * 1024);
    expect(result.bytes).toBeLessThan(1024 * 1024 + 64 * 1024);
    const repository = `agentbox-snapshots/${ns}/sb-commit/sandbox`;
    const digest = result.image.slice(result.image.indexOf("@") + 1);
    expect(await manifestStatus(repository, "g1")).toBe(200);
    const base = await manifestOf(
      "agentbox/sandbox-a",
      container.image.slice(container.image.indexOf("@") + 1),
    );
    const snap = await manifestOf(repository, digest);
    // The base image's layers, by the same digests, and the container's layer on top.
    expect(snap.layers.slice(0, -1).map((l) => l.digest)).toEqual(base.layers.map((l) => l.digest));
    expect(snap.layers.at(-1)).toMatchObject({
      mediaType: "application/vnd.oci.image.layer.v1.tar",
      size: result.bytes,
    });

    // A commit retried for the same generation (its agent died after the push) over the same
    // files: containerd's diff is the same tar (mtimes from the files, whiteouts at the epoch, no
    // compression) and the documents carry no clock, so it is the same manifest, not an orphan.
    const retried = await committer.commit(request, AbortSignal.timeout(120_000));
    expect(retried).toEqual(result);

    await runPod("reader", result.image, READ, "Never");
    await until("the reader done", 180_000, async () => {
      const p: V1Pod = await core.readNamespacedPod({ name: "reader", namespace: ns });
      if (p.status?.phase === "Failed") throw new Error(`reader failed: ${await logOf("reader")}`);
      return p.status?.phase === "Succeeded";
    });
    const log = await logOf("reader");
    console.log(`the reader's log:\n${log}`);
    expect(log).toContain("hello from before the pause");
    expect(log).toContain("/home/user/big.bin: OK");
    expect(log).toContain("size=1048576");
    expect(log).toContain("marker=absent");
    // The base image's files are all there under the new layer.
    expect(log).toMatch(/^1$/m);

    // Paused again after a resume: the reader's container runs the snapshot; its commit is one
    // layer above that (the base layers mounted within the snapshot's own repository).
    const readerPod: V1Pod = await core.readNamespacedPod({ name: "reader", namespace: ns });
    const readerStatus = readerPod.status?.containerStatuses?.find((c) => c.name === "sandbox");
    const again = {
      name: "sandbox",
      containerID: readerStatus?.containerID ?? "",
      image: readerStatus?.imageID ?? "",
    };
    expect(again.image).toBe(`${IMAGE_REGISTRY}/${repository}@${digest}`);
    const second = await committer.commit(
      {
        namespace: ns,
        sandboxId: "sb-commit",
        source: { ...source, pod: "reader", podUID: readerPod.metadata?.uid ?? "", containers: [again] },
        container: again,
        target: snapshotTarget(IMAGE_REGISTRY, ns, "sb-commit", "sandbox", 2),
        created: CREATED,
      },
      AbortSignal.timeout(120_000),
    );
    const secondDigest = second.image.slice(second.image.indexOf("@") + 1);
    const stacked = await manifestOf(repository, secondDigest);
    expect(stacked.layers.slice(0, -1)).toEqual(snap.layers);
    expect(stacked.layers).toHaveLength(base.layers.length + 2);
    await committer.remove(second.image, AbortSignal.timeout(30_000));
    expect(await manifestStatus(repository, secondDigest)).toBe(404);

    await committer.remove(result.image, AbortSignal.timeout(30_000));
    expect(await manifestStatus(repository, digest)).toBe(404);
    expect(await manifestStatus(repository, "g1")).toBe(404);
    // An image already gone is not an error.
    await committer.remove(result.image, AbortSignal.timeout(30_000));
  });

  it("says a container that is gone is gone", async () => {
    const container = {
      name: "sandbox",
      containerID: `containerd://${"0".repeat(64)}`,
      image: REAL_IMAGES.a,
    };
    const req = {
      namespace: ns,
      sandboxId: "sb-gone",
      source: { node: realNode().name, pod: "vanished", podUID: "u", containers: [container] },
      container,
      target: snapshotTarget(IMAGE_REGISTRY, ns, "sb-gone", "sandbox", 1),
      created: CREATED,
    };
    const error = await committer.commit(req, AbortSignal.timeout(60_000)).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    console.log(`a gone container: ${error?.message}`);
    expect(error?.message).toMatch(
      new RegExp(
        `^container containerd://0{64} of pod ${ns}/vanished is gone: ctr: snapshot 0{64} does not exist: not found$`,
      ),
    );
    expect(await manifestStatus(`agentbox-snapshots/${ns}/sb-gone/sandbox`, "g1")).toBe(404);
  });

  it("fails with the registry's name and error when the registry is down, pushing nothing", async () => {
    if (!written) throw new Error("the first case did not leave a running container to commit");
    const target = snapshotTarget(IMAGE_REGISTRY, ns, "sb-down", "sandbox", 1);
    const req = { namespace: ns, sandboxId: "sb-down", ...written, target, created: CREATED };
    // A port nothing listens on (fetch refuses a few low ports as unsafe before connecting).
    const [closed] = await freePorts(1);
    const error = await committerOn(`http://127.0.0.1:${closed}`)
      .commit(req, AbortSignal.timeout(60_000))
      .then(
        () => undefined,
        (e: unknown) => e as Error,
      );
    console.log(`the registry down: ${error?.message}`);
    expect(error?.message).toBe(
      `pulling from registry.agentbox.test: connect ECONNREFUSED 127.0.0.1:${closed}`,
    );
    expect(await manifestStatus(`agentbox-snapshots/${ns}/sb-down/sandbox`, "g1")).toBe(404);
  });

  it("uploads a blob into the session a refused mount opened", async () => {
    const registry = new RegistryClient({ endpoints: { [IMAGE_REGISTRY]: registryUrl } });
    const bytes = new TextEncoder().encode(`a blob of ${ns}\n`);
    const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
    const repo = `agentbox-snapshots/${ns}/sb-mount/sandbox`;
    const signal = AbortSignal.timeout(30_000);
    const mount = await registry.mountBlob(IMAGE_REGISTRY, repo, digest, "agentbox/no-such-repo", signal);
    expect(mount.mounted).toBe(false);
    if (mount.mounted) return;
    expect(await registry.hasBlob(IMAGE_REGISTRY, repo, digest, signal)).toBe(false);
    await registry.uploadBlob(IMAGE_REGISTRY, repo, digest, bytes.length, bytes, signal, mount.location);
    expect(await registry.hasBlob(IMAGE_REGISTRY, repo, digest, signal)).toBe(true);
    expect(await registry.getBlobText(IMAGE_REGISTRY, repo, digest, signal)).toBe(`a blob of ${ns}\n`);
    // A second mount, now from a repository that holds it, links it without an upload.
    const other = `agentbox-snapshots/${ns}/sb-mount/other`;
    expect(await registry.mountBlob(IMAGE_REGISTRY, other, digest, repo, signal)).toEqual({ mounted: true });
    expect(await registry.hasBlob(IMAGE_REGISTRY, other, digest, signal)).toBe(true);
  });
});
