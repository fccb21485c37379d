import { createHash, randomBytes } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { Committer } from "../../functions/snapshots/committer.ts";
import { containerdCommitter, type LayerDiffer } from "../../functions/snapshots/containerd-committer.ts";
import { RegistryClient } from "../../functions/snapshots/registry-client.ts";
import { type SnapshotAgent, startSnapshotAgent } from "../../functions/snapshots/snapshot-agent.ts";
import { nodeKubeTransport, nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import { freePorts } from "../../infra/cluster/ports.ts";
import type { SandboxSnapshot } from "../../lib/crd/sandbox-snapshot.ts";
import { SNAPSHOT_FINALIZER } from "../../lib/crd/sandbox-snapshot.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import { MAX_IMAGE_LAYERS, OCI_MEDIA } from "../../lib/snapshots/image-build.ts";
import { snapshotRepository, snapshotTarget } from "../../lib/snapshots/image-names.ts";
import type { Log } from "../../lib/util/log.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { pushImage, type RegistryProcess, startRegistry } from "./support/registry-process.ts";
import { AGENT_TEST_NODES } from "./support/snapshot-agent-nodes.ts";

// The node's snapshot agent with the real registry backend (the containerd committer and the
// registry client) against a registry of its own (the project's docker-registry, distribution
// 2.8, started here) and the real apiserver; only the container runtime is a stand-in (a
// LayerDiffer answering a fixed layer per container id: a container whose files do not change).
// It leaks no image: a commit retried after the agent died between its push and its status
// write pushes the very manifest of the first attempt (or, over files changed since, deletes the
// first one it re-tagged), and a deleted snapshot's repositories are emptied of every manifest,
// the ones never recorded in its status too. A base already at the layer limit is refused before
// anything is spooled or pushed.

const { core, kc } = kube();
const client = new KubeClient(nodeKubeTransport(kc));
const log: Log = { debug() {}, info() {}, warn() {}, error() {} };
const REGISTRY = "registry.agentbox.test";
const NODE = AGENT_TEST_NODES.registry;
const BASE_REPO = "agentbox/base";
const signal = () => AbortSignal.timeout(30_000);

let ns = "";
let cleanup = async () => {};
let registryProcess: RegistryProcess | undefined;
let registry: RegistryClient;
let baseImage = "";
/** running are the agents started and not stopped yet (afterAll stops them). */
const running = new Set<SnapshotAgent>();

const sha256 = (b: Uint8Array | string) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

/** edits counts the changes a test made to a container's files since it started (none: 0). */
const edits = new Map<string, number>();

/** layerOf is the layer "diffed" from a container: the same bytes while its files stay the same. */
const layerOf = (containerId: string) =>
  new TextEncoder().encode(`the files of ${containerId}, edit ${edits.get(containerId) ?? 0}\n`);

/** diff is the runtime stand-in: containerd's diff of a container whose files stay as they are. */
const diff: LayerDiffer = async (containerId, sig) => {
  sig.throwIfAborted();
  const bytes = layerOf(containerId);
  return {
    digest: sha256(bytes),
    size: bytes.length,
    open: async function* () {
      yield bytes;
    },
    dispose: async () => {},
  };
};

const committer = () => containerdCommitter({ diff, registry });

/** startAgent runs a snapshot agent for NODE over `c`; stop it with stopAgent (afterEach at the latest). */
function startAgent(c: Committer): SnapshotAgent {
  const agent = startSnapshotAgent({
    kube: client,
    watch: nodeKubeWatch(kc),
    fieldSelector: `spec.source.node=${NODE}`,
    committer: c,
    registry: REGISTRY,
    log,
    now: () => new Date(),
    retryMs: [100],
  });
  running.add(agent);
  return agent;
}

async function stopAgent(agent: SnapshotAgent): Promise<void> {
  running.delete(agent);
  await agent.stop();
}

/** pushBase puts a base image of `count` layers (one by default) in the registry as `repository`:1. */
const pushBase = (repository = BASE_REPO, count = 1) => pushImage(registry, REGISTRY, repository, "1", count);

beforeAll(async () => {
  ({ ns, cleanup } = await newNamespace(core, "snapreg"));
  registryProcess = await startRegistry();
  registry = new RegistryClient({ endpoints: { [REGISTRY]: registryProcess.url }, timeoutMs: 10_000 });
  baseImage = await pushBase();
});

// Each case's agents end with it, whatever its outcome: a case never meets another's agent.
afterEach(async () => {
  vi.useRealTimers();
  for (const agent of [...running]) await stopAgent(agent);
});

afterAll(async () => {
  await cleanup();
  await registryProcess?.stop();
});

const newId = () => `sb${randomBytes(5).toString("hex")}`;
const get = (id: string) => client.getSnapshot(ns, id);

/**
 * create writes a snapshot as a pause does: Committing (no status), this file's node, the
 * finalizer, its container running `image` (the one-layer base unless said otherwise).
 */
function create(id: string, containerID: string, image = baseImage) {
  const body: SandboxSnapshot = {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxSnapshot",
    metadata: { name: id, finalizers: [SNAPSHOT_FINALIZER] },
    spec: {
      sandboxId: id,
      pool: "pool-a",
      source: {
        node: NODE,
        pod: `pool-a-${id}`,
        podUID: randomBytes(8).toString("hex"),
        containers: [{ name: "sandbox", containerID, image }],
      },
      claim: { containerImages: { sandbox: image }, team: "team-a" },
    },
  };
  return client.createSnapshot(ns, body);
}

const committed = (id: string) =>
  until(`${id} Committed`, 20_000, async () => {
    const s = await get(id);
    return s.status?.phase === "Committed" && s.status.observedGeneration === 1 ? s : undefined;
  });

/** repoOf is a sandbox container's snapshot repository path in the registry. */
const repoOf = (id: string) => `agentbox-snapshots/${ns}/${id}/sandbox`;

/** headStatus is the registry's answer to HEAD of a manifest (by tag or digest). */
async function headStatus(repository: string, reference: string): Promise<number> {
  const res = await fetch(`${registryProcess?.url}/v2/${repository}/manifests/${reference}`, {
    method: "HEAD",
    headers: { accept: OCI_MEDIA.manifest },
    signal: AbortSignal.timeout(10_000),
  });
  return res.status;
}

const digestOf = (image: string) => image.slice(image.indexOf("@") + 1);

/**
 * diesAfterPush has an agent commit a new snapshot and die between its push and its status write
 * (the commit is held until the agent stops); it answers the snapshot's id and the image pushed,
 * which nothing records.
 */
async function diesAfterPush(containerID: string): Promise<{ id: string; image: string }> {
  const pushed: string[] = [];
  const real = committer();
  const dying: Committer = {
    ...real,
    commit: async (req, sig) => {
      const done = await real.commit(req, sig);
      pushed.push(done.image);
      return await new Promise<never>((_, reject) =>
        sig.addEventListener("abort", () => reject(new Error("the agent died")), { once: true }),
      );
    },
  };
  const agent = startAgent(dying);
  const id = newId();
  await create(id, containerID);
  const [image = ""] = await until(
    "the first attempt pushed",
    20_000,
    async () => pushed.length > 0 && pushed,
  );
  await stopAgent(agent);
  expect((await get(id)).status).toBeUndefined();
  const target = snapshotTarget(REGISTRY, ns, id, "sandbox", 1);
  expect(image).toMatch(new RegExp(`^${target.replace(/[.]/g, "\\.")}@sha256:[0-9a-f]{64}$`));
  expect(await registry.listTags(REGISTRY, repoOf(id), signal())).toEqual(["g1"]);
  return { id, image };
}

describe("snapshot agent with the registry backend", () => {
  it("retries a commit the agent died after pushing as the same manifest, orphaning nothing", async () => {
    const { id, image } = await diesAfterPush("containerd://c-retry");

    // The next agent commits the same generation again, an hour later by the clock: the same
    // layer makes the same manifest, so `:g1` still names the first attempt's and nothing is orphaned.
    vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true });
    vi.setSystemTime(Date.now() + 3_600_000);
    const second = startAgent(committer());
    try {
      const s = await committed(id);
      expect(s.status?.images?.sandbox).toBe(image);
      expect(await registry.manifestDigest(REGISTRY, repoOf(id), "g1", signal())).toBe(digestOf(image));
      expect(await registry.listTags(REGISTRY, repoOf(id), signal())).toEqual(["g1"]);
    } finally {
      vi.useRealTimers();
    }

    // Its manifest records the object's creation, not the time of either attempt.
    const manifest = await registry.getManifest(REGISTRY, repoOf(id), digestOf(image), signal());
    const config = JSON.parse(manifest.json).config.digest as string;
    const created = JSON.parse(await registry.getBlobText(REGISTRY, repoOf(id), config, signal())).created;
    expect(created).toBe((await get(id)).metadata?.creationTimestamp);

    await client.deleteSnapshot(ns, id);
    await until("the snapshot gone", 20_000, async () => (await orMissing(get(id))) === undefined);
    expect(await headStatus(repoOf(id), digestOf(image))).toBe(404);
    await stopAgent(second);
  });

  it("retries over files changed since as a new manifest, and deletes the one it re-tagged", async () => {
    const { id, image } = await diesAfterPush("containerd://c-changing");
    // The sandbox kept running and wrote a file before the next agent's commit.
    edits.set("c-changing", 1);
    const agent = startAgent(committer());
    const s = await committed(id);
    const retried = s.status?.images?.sandbox ?? "";
    expect(retried).toContain(`/${repoOf(id)}:g1@sha256:`);
    expect(digestOf(retried)).not.toBe(digestOf(image));
    expect(await registry.manifestDigest(REGISTRY, repoOf(id), "g1", signal())).toBe(digestOf(retried));
    // The first attempt's manifest, no longer tagged (a tags list would never find it), is gone.
    await until("the re-tagged manifest deleted", 20_000, async () =>
      (await headStatus(repoOf(id), digestOf(image))) === 404 ? true : undefined,
    );
    expect(await headStatus(repoOf(id), digestOf(retried))).toBe(200);
    await client.deleteSnapshot(ns, id);
    await until("the snapshot gone", 20_000, async () => (await orMissing(get(id))) === undefined);
    expect(await headStatus(repoOf(id), digestOf(retried))).toBe(404);
    await stopAgent(agent);
  });

  it("empties a deleted snapshot's repository, a manifest pushed but never recorded too, and no other", async () => {
    const agent = startAgent(committer());
    const id = newId();
    await create(id, "containerd://c-final");
    const s = await committed(id);
    const recorded = s.status?.images?.sandbox ?? "";
    expect(recorded).toContain(`/${repoOf(id)}:g1@sha256:`);

    // A commit of a later pause pushed `:g2` and its agent died before recording it; and another
    // sandbox's snapshot sits beside it in the registry.
    const req = (sandboxId: string, generation: number) => ({
      namespace: ns,
      sandboxId,
      source: s.spec.source,
      container: { name: "sandbox", containerID: "containerd://c-other", image: baseImage },
      target: snapshotTarget(REGISTRY, ns, sandboxId, "sandbox", generation),
      created: "2026-12-02T10:00:00Z",
    });
    const stray = await committer().commit(req(id, 2), signal());
    const neighbourId = newId();
    const neighbour = await committer().commit(req(neighbourId, 1), signal());
    expect((await get(id)).status?.images).toEqual({ sandbox: recorded });
    expect(await registry.listTags(REGISTRY, repoOf(id), signal())).toEqual(["g1", "g2"]);
    expect(await headStatus(repoOf(id), digestOf(stray.image))).toBe(200);

    await client.deleteSnapshot(ns, id);
    await until("the snapshot gone", 20_000, async () => (await orMissing(get(id))) === undefined);
    expect(await headStatus(repoOf(id), digestOf(recorded))).toBe(404);
    expect(await headStatus(repoOf(id), digestOf(stray.image))).toBe(404);
    expect(await registry.listTags(REGISTRY, repoOf(id), signal())).toEqual([]);
    // Another sandbox's repository is not the deleted snapshot's: untouched.
    expect(await headStatus(repoOf(neighbourId), digestOf(neighbour.image))).toBe(200);
    // Emptying is idempotent, a repository that never existed is nothing to do, and nothing
    // outside agentbox-snapshots/ is ever emptied.
    await committer().removeRepository(snapshotRepository(REGISTRY, ns, id, "sandbox"), signal());
    await committer().removeRepository(snapshotRepository(REGISTRY, ns, newId(), "sandbox"), signal());
    await expect(committer().removeRepository(`${REGISTRY}/${BASE_REPO}`, signal())).rejects.toThrow(
      /not a snapshot repository/,
    );
    expect(await registry.listTags(REGISTRY, BASE_REPO, signal())).toEqual(["1"]);
    await stopAgent(agent);
  });

  it("refuses a commit past the layer limit before pushing anything: Failed, saying why", async () => {
    const deep = await pushBase("agentbox/deep-base", MAX_IMAGE_LAYERS);
    const diffed: string[] = [];
    startAgent(
      containerdCommitter({
        diff: async (containerId, sig) => {
          diffed.push(containerId);
          return diff(containerId, sig);
        },
        registry,
      }),
    );
    const id = newId();
    await create(id, "containerd://c-deep", deep);
    const s = await until(`${id} Failed`, 20_000, async () => {
      const got = await get(id);
      return got.status?.phase === "Failed" ? got : undefined;
    });
    expect(s.status?.message).toBe(
      `commit of container sandbox failed: the sandbox's image has ${MAX_IMAGE_LAYERS} layers; a pause ` +
        `adds one and ${MAX_IMAGE_LAYERS + 1} exceeds the limit of ${MAX_IMAGE_LAYERS}: a container runtime ` +
        `could not mount the snapshot to resume it (image ${deep})`,
    );
    expect(s.status?.images).toBeUndefined();
    // Refused before the container's changes were even spooled, and nothing reached the registry.
    expect(diffed).toEqual([]);
    expect(await registry.listTags(REGISTRY, repoOf(id), signal())).toEqual([]);
    await client.deleteSnapshot(ns, id);
    await until("the snapshot gone", 20_000, async () => (await orMissing(get(id))) === undefined);
  });

  it("lets a snapshot whose commit failed with the registry down go while it is still down", async () => {
    // A port nothing listens on: the registry is down for this agent, its commit and its sweep.
    const [closed] = await freePorts(1);
    const down = new RegistryClient({ endpoints: { [REGISTRY]: `http://127.0.0.1:${closed}` } });
    startAgent(containerdCommitter({ diff, registry: down }));
    const id = newId();
    await create(id, "containerd://c-down");
    const s = await until(`${id} Failed`, 20_000, async () => {
      const got = await get(id);
      return got.status?.phase === "Failed" ? got : undefined;
    });
    expect(s.status?.message).toContain(`connect ECONNREFUSED 127.0.0.1:${closed}`);
    expect(s.status?.images).toBeUndefined();
    // Nothing of it is recorded and its commit pushed nothing: its finalizer goes though the
    // repository cannot be listed (the sandbox, still running, may pause again once it is back).
    await client.deleteSnapshot(ns, id);
    await until("the snapshot gone", 20_000, async () => (await orMissing(get(id))) === undefined);
    expect(await registry.listTags(REGISTRY, repoOf(id), signal())).toEqual([]);
  });
});
