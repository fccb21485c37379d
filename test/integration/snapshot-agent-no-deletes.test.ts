import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeletesDisabled } from "../../functions/snapshots/committer.ts";
import { containerdCommitter } from "../../functions/snapshots/containerd-committer.ts";
import { RegistryClient } from "../../functions/snapshots/registry-client.ts";
import { type SnapshotAgent, startSnapshotAgent } from "../../functions/snapshots/snapshot-agent.ts";
import { nodeKubeTransport, nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import { SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import type { Log } from "../../lib/util/log.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { pushImage, type RegistryProcess, startRegistry } from "./support/registry-process.ts";
import { AGENT_TEST_NODES, agentTestSnapshot } from "./support/snapshot-agent-nodes.ts";

// A registry that refuses deletes (distribution with storage.delete off, as some operators run
// it): the real registry process and the real apiserver. No retry would make it delete, so the
// snapshot agent forgets what it cannot delete (the images stay; an error says why and names the
// setting) instead of retrying for ever and holding a snapshot's finalizer, and with it the
// sandbox's next pause.

const { core, kc } = kube();
const client = new KubeClient(nodeKubeTransport(kc));
const REGISTRY = "registry.agentbox.test";
const NODE = AGENT_TEST_NODES.noDeletes;
const signal = () => AbortSignal.timeout(30_000);
/** errors are the agent's error lines (message and the item it names). */
const errors: string[] = [];
const log: Log = {
  debug() {},
  info() {},
  warn() {},
  error: (obj, msg) => errors.push(`${msg}: ${JSON.stringify(obj)}`),
};

let ns = "";
let cleanup = async () => {};
let registryProcess: RegistryProcess | undefined;
let registry: RegistryClient;
let agent: SnapshotAgent | undefined;

beforeAll(async () => {
  ({ ns, cleanup } = await newNamespace(core, "snapnodel"));
  registryProcess = await startRegistry({ deletes: false });
  registry = new RegistryClient({ endpoints: { [REGISTRY]: registryProcess.url }, timeoutMs: 10_000 });
  agent = startSnapshotAgent({
    kube: client,
    watch: nodeKubeWatch(kc),
    fieldSelector: `spec.source.node=${NODE}`,
    committer: containerdCommitter({
      diff: async () => {
        throw new Error("this test commits nothing");
      },
      registry,
    }),
    registry: REGISTRY,
    log,
    now: () => new Date(),
    retryMs: [100, 200],
  });
});
afterAll(async () => {
  await agent?.stop();
  await cleanup();
  await registryProcess?.stop();
});

const repoOf = (id: string) => `agentbox-snapshots/${ns}/${id}/sandbox`;
const digestOf = (image: string) => image.slice(image.indexOf("@") + 1);

describe("a registry that refuses deletes", () => {
  it("is told apart by the registry client: DeletesDisabled, naming the setting; the image stays", async () => {
    const id = `sb${randomBytes(5).toString("hex")}`;
    const image = await pushImage(registry, REGISTRY, repoOf(id), "g1");
    const refused = await registry.deleteManifest(REGISTRY, repoOf(id), digestOf(image), signal()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(DeletesDisabled);
    expect(String(refused)).toContain("storage.delete.enabled");
    expect(await registry.manifestDigest(REGISTRY, repoOf(id), "g1", signal())).toBe(digestOf(image));
  });

  it("makes the agent forget a paused snapshot's stale image and let a deleted snapshot go, the images kept", async () => {
    const id = `sb${randomBytes(5).toString("hex")}`;
    const g1 = await pushImage(registry, REGISTRY, repoOf(id), "g1");
    const g2 = await pushImage(registry, REGISTRY, repoOf(id), "g2", 2);
    // Its commit long answered (a deadline past: the agent begins no commit of it), then Paused.
    const body = agentTestSnapshot(id, NODE, { finalizer: true });
    body.spec.source.commitUntil = new Date(Date.now() - 60_000).toISOString();
    const created = await client.createSnapshot(ns, body);
    await client.replaceSnapshotStatus(ns, {
      ...created,
      status: {
        phase: SNAPSHOT_PHASE.PAUSED,
        observedGeneration: created.metadata?.generation ?? 1,
        images: { sandbox: g2 },
        staleImages: { "sandbox:g1": g1 },
        recorded: { paused: 1 },
      },
    });
    await until("the stale image forgotten", 20_000, async () => {
      const s = await client.getSnapshot(ns, id);
      return s.status?.staleImages === undefined ? s : undefined;
    });
    expect(errors.some((e) => e.includes(g1) && e.includes("does not allow deletes"))).toBe(true);
    expect(await registry.manifestDigest(REGISTRY, repoOf(id), "g1", signal())).toBe(digestOf(g1));
    // Killed: once the hosts say its terminal record is written, its finalizer goes although
    // nothing could be deleted.
    await client.deleteSnapshot(ns, id);
    await client.patchSnapshotStatus(ns, id, { recorded: { ended: true } });
    await until(
      "the snapshot gone",
      20_000,
      async () => (await orMissing(client.getSnapshot(ns, id))) === undefined,
    );
    expect(await registry.manifestDigest(REGISTRY, repoOf(id), "g2", signal())).toBe(digestOf(g2));
  });
});
