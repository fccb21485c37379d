import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CommitRequest, CommitResult, Committer } from "../../functions/snapshots/committer.ts";
import { type SnapshotAgent, startSnapshotAgent } from "../../functions/snapshots/snapshot-agent.ts";
import { nodeKubeTransport, nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import type { SandboxSnapshotStatus } from "../../lib/crd/sandbox-snapshot.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import type { Log } from "../../lib/util/log.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { AGENT_TEST_NODES, agentTestSnapshot } from "./support/snapshot-agent-nodes.ts";

// The node's snapshot agent (functions/snapshots/snapshot-agent.ts) against the real apiserver:
// it watches its node's SandboxSnapshots (a CRD selectable field), commits through a Committer
// and writes the outcome as the status, deletes images a later pause replaced once paused again,
// and deletes every image of a deleted snapshot before letting it go. The committer here is a
// recording one written for the test: it is the agent's own interface, not the API server (the
// containerd and stand-in committers have their own tests).

const { core, kc } = kube();
const client = new KubeClient(nodeKubeTransport(kc));
const log: Log = { debug() {}, info() {}, warn() {}, error() {} };
const REGISTRY = "registry.agentbox.test";
// Nodes no other agent of the run watches (the global setup's kwok agent leaves them out).
const NODE = AGENT_TEST_NODES.own;
let ns = "";
let cleanup = async () => {};
let agent: SnapshotAgent | undefined;

/** RecordingCommitter answers each commit with `target@sha256:<hash of target>`, as a registry would. */
class RecordingCommitter implements Committer {
  readonly commits: CommitRequest[] = [];
  readonly removed: string[] = [];
  readonly emptied: string[] = [];
  /** failing: sandbox ids whose commit fails. */
  readonly failing = new Set<string>();
  /** held: sandbox ids whose commit waits until released. */
  readonly held = new Map<string, { started: () => void; release: Promise<void> }>();

  async commit(req: CommitRequest, signal: AbortSignal): Promise<CommitResult> {
    this.commits.push(req);
    const hold = this.held.get(req.sandboxId);
    if (hold) {
      hold.started();
      await hold.release;
    }
    signal.throwIfAborted();
    if (this.failing.has(req.sandboxId)) throw new Error("registry down: connection refused");
    const digest = createHash("sha256").update(req.target).digest("hex");
    return { image: `${req.target}@sha256:${digest}`, bytes: 1024 };
  }

  async remove(image: string): Promise<void> {
    this.removed.push(image);
  }

  async removeRepository(repository: string): Promise<void> {
    this.emptied.push(repository);
  }

  /** hold makes the next commit of id wait; it answers when that commit started and its release. */
  hold(id: string): { started: Promise<void>; release: () => void } {
    let started = () => {};
    let release = () => {};
    const startedP = new Promise<void>((r) => {
      started = r;
    });
    const releaseP = new Promise<void>((r) => {
      release = r;
    });
    this.held.set(id, { started, release: releaseP });
    return { started: startedP, release };
  }

  commitsOf(id: string): CommitRequest[] {
    return this.commits.filter((c) => c.sandboxId === id);
  }
}

const committer = new RecordingCommitter();

beforeAll(async () => {
  ({ ns, cleanup } = await newNamespace(core, "snapagent"));
  agent = startSnapshotAgent({
    kube: client,
    watch: nodeKubeWatch(kc),
    fieldSelector: `spec.source.node=${NODE}`,
    committer,
    registry: REGISTRY,
    log,
    now: () => new Date(),
    retryMs: [100],
  });
});
afterAll(async () => {
  await agent?.stop();
  await cleanup();
});

const newId = () => `sb${randomBytes(5).toString("hex")}`;

/** create writes a snapshot as a pause does: no status (Committing), its node's source. */
function create(id: string, opts: { node?: string; finalizer?: boolean; containerID?: string } = {}) {
  return client.createSnapshot(ns, agentTestSnapshot(id, opts.node ?? NODE, opts));
}

const get = (id: string) => client.getSnapshot(ns, id);

/** phaseOf waits for the snapshot to reach a phase for a generation (the agent's answer). */
const answered = (id: string, phase: string, generation: number) =>
  until(`${id} ${phase} at generation ${generation}`, 20_000, async () => {
    const s = await get(id);
    return s.status?.phase === phase && s.status.observedGeneration === generation ? s : undefined;
  });

/** setStatus writes the status as a host does (phase changes), at the version read. */
async function setStatus(id: string, change: (s: SandboxSnapshotStatus) => SandboxSnapshotStatus) {
  const s = await get(id);
  return client.replaceSnapshotStatus(ns, { ...s, status: change(s.status ?? {}) });
}

/**
 * passed makes sure the agent has heard everything written so far: a marker snapshot written
 * after it is committed only once the agent's watch has gone past every earlier event.
 */
async function passed(): Promise<void> {
  const marker = newId();
  await create(marker);
  await answered(marker, "Committed", 1);
  await agent?.idle();
}

describe("snapshot agent", () => {
  it("commits a new snapshot's containers and writes Committed with the images, once", async () => {
    const id = newId();
    await create(id);
    const s = await answered(id, "Committed", 1);
    const target = `${REGISTRY}/agentbox-snapshots/${ns}/${id}/sandbox:g1`;
    expect(committer.commitsOf(id).map((c) => c.target)).toEqual([target]);
    expect(committer.commitsOf(id)[0]?.container.containerID).toBe("containerd://c1");
    // Dated by the object, never the clock: a retried commit of this generation is the same image.
    expect(committer.commitsOf(id)[0]?.created).toBe(s.metadata?.creationTimestamp);
    expect(s.status?.images?.sandbox).toMatch(
      new RegExp(`^${target.replace(/[.]/g, "\\.")}@sha256:[0-9a-f]{64}$`),
    );
    expect(s.status?.bytes).toBe(1024);
    expect(Date.parse(s.status?.committedAt ?? "")).not.toBeNaN();
    expect(s.status?.staleImages).toBeUndefined();

    // A generation already answered is never committed again, whatever else changes.
    await setStatus(id, (st) => ({ ...st, phase: "Committing" }));
    await passed();
    expect(committer.commitsOf(id)).toHaveLength(1);
  });

  it("commits a paused-again sandbox as the next generation; the old images go once it is Paused", async () => {
    const id = newId();
    await create(id);
    const first = await answered(id, "Committed", 1);
    const old = first.status?.images?.sandbox ?? "";
    // The host: Paused, Resumed, then a new pause replaces spec.source (generation 2) and asks again.
    await setStatus(id, (st) => ({ ...st, phase: "Resumed" }));
    const s = await get(id);
    await client.replaceSnapshot(ns, {
      ...s,
      spec: {
        ...s.spec,
        source: {
          ...s.spec.source,
          containers: [{ name: "sandbox", containerID: "containerd://c2", image: old }],
        },
      },
    });
    await setStatus(id, (st) => ({ ...st, phase: "Committing" }));
    const second = await answered(id, "Committed", 2);
    expect(committer.commitsOf(id).map((c) => c.target.split(":").pop())).toEqual(["g1", "g2"]);
    expect(committer.commitsOf(id)[1]?.container.image).toBe(old);
    expect(second.status?.images?.sandbox).toContain("/sandbox:g2@sha256:");
    expect(second.status?.staleImages).toEqual({ "sandbox:g1": old });
    expect(committer.removed).not.toContain(old);

    await setStatus(id, (st) => ({ ...st, phase: "Paused" }));
    await until("stale images deleted and forgotten", 20_000, async () => {
      const s = await get(id);
      return s.status?.phase === "Paused" && s.status.staleImages === undefined;
    });
    expect(committer.removed).toContain(old);
    expect((await get(id)).status?.images?.sandbox).toBe(second.status?.images?.sandbox);
  });

  it("writes Failed with the committer's message when a commit fails", async () => {
    const id = newId();
    committer.failing.add(id);
    await create(id);
    const s = await answered(id, "Failed", 1);
    expect(s.status?.message).toBe("commit of container sandbox failed: registry down: connection refused");
    expect(s.status?.images).toBeUndefined();
    await passed();
    expect(committer.commitsOf(id)).toHaveLength(1);
  });

  it("deletes a deleted snapshot's images and empties its repositories, then lets it go (its finalizer)", async () => {
    const id = newId();
    await create(id, { finalizer: true });
    const s = await answered(id, "Committed", 1);
    const image = s.status?.images?.sandbox ?? "";
    await client.deleteSnapshot(ns, id);
    await until("the snapshot gone", 20_000, async () => (await orMissing(get(id))) === undefined);
    expect(committer.removed).toContain(image);
    expect(committer.emptied.filter((r) => r.includes(`/${id}/`))).toEqual([
      `${REGISTRY}/agentbox-snapshots/${ns}/${id}/sandbox`,
    ]);
  });

  it("never touches a snapshot of another node", async () => {
    const id = newId();
    await create(id, { node: AGENT_TEST_NODES.other });
    await passed();
    expect(committer.commitsOf(id)).toEqual([]);
    expect((await get(id)).status).toBeUndefined();
  });

  it("keeps a commit's result when another writer changes the object during the commit", async () => {
    const id = newId();
    const hold = committer.hold(id);
    await create(id);
    await hold.started;
    // Someone else writes meanwhile (a label on the object, a condition on its status): the
    // agent's status write at the version it read conflicts.
    const s = await get(id);
    await client.replaceSnapshot(ns, { ...s, metadata: { ...s.metadata, labels: { touched: "yes" } } });
    await setStatus(id, (st) => ({ ...st, phase: "Committing" }));
    hold.release();
    const done = await answered(id, "Committed", 1);
    expect(done.metadata?.labels?.touched).toBe("yes");
    expect(done.status?.images?.sandbox).toContain("/sandbox:g1@sha256:");
    expect(committer.commitsOf(id)).toHaveLength(1);
  });

  it("drops a commit overtaken by a newer pause and commits that one instead", async () => {
    const id = newId();
    const hold = committer.hold(id);
    await create(id);
    await hold.started;
    committer.held.delete(id);
    const s = await get(id);
    await client.replaceSnapshot(ns, {
      ...s,
      spec: {
        ...s.spec,
        source: {
          ...s.spec.source,
          containers: [{ name: "sandbox", containerID: "containerd://c9", image: "img:1" }],
        },
      },
    });
    hold.release();
    const done = await answered(id, "Committed", 2);
    expect(committer.commitsOf(id).map((c) => c.target.split(":").pop())).toEqual(["g1", "g2"]);
    expect(done.status?.images?.sandbox).toContain("/sandbox:g2@sha256:");
    // The generation-1 image was pushed for a source nobody wants any more: deleted, not kept.
    expect(done.status?.staleImages).toBeUndefined();
    expect(committer.removed.some((i) => i.includes(`/${id}/sandbox:g1@`))).toBe(true);
  });
  it("deletes what it pushed for a snapshot deleted during the commit", async () => {
    const id = newId();
    const hold = committer.hold(id);
    await create(id);
    await hold.started;
    await client.deleteSnapshot(ns, id);
    hold.release();
    await until("the pushed image deleted", 20_000, async () =>
      committer.removed.some((i) => i.includes(`/${id}/sandbox:g1@`)),
    );
    expect(await orMissing(get(id))).toBeUndefined();
  });

  it("does not begin a commit past its pause's deadline, nor answer it (the hosts abandon that pause)", async () => {
    const id = newId();
    const late = agentTestSnapshot(id, NODE, {});
    late.spec.source.commitUntil = new Date(Date.now() - 1000).toISOString();
    await client.createSnapshot(ns, late);
    await passed();
    expect(committer.commitsOf(id)).toHaveLength(0);
    expect((await get(id)).status).toBeUndefined();
  });

  it("stops a commit at its pause's deadline, answers nothing and does not begin it again", async () => {
    const id = newId();
    const hold = committer.hold(id);
    const due = agentTestSnapshot(id, NODE, {});
    const deadline = Date.now() + 1500;
    due.spec.source.commitUntil = new Date(deadline).toISOString();
    await client.createSnapshot(ns, due);
    await hold.started;
    await until("the pause's deadline passed", 10_000, async () => Date.now() > deadline + 200 || undefined);
    hold.release();
    await passed();
    expect(committer.commitsOf(id)).toHaveLength(1);
    expect((await get(id)).status).toBeUndefined();
  });
});
