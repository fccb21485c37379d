import { chmod, mkdir, mkdtemp, readFile, readlink, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { commitTake } from "../../infra/dev/envd/commit-check.ts";
import { podInstance } from "../../infra/dev/envd/pod-instances.ts";
import { type Instance, Pods } from "../../infra/dev/envd/pods.ts";
import { serveEnvd } from "../../infra/dev/envd/serve.ts";
import { SnapshotStore, treeDigest } from "../../infra/dev/envd/snapshot-store.ts";
import { standInCommitter } from "../../infra/dev/envd/stand-in-committer.ts";

// The envd stand-in's snapshots (issue #39: on kwok the stand-in's directory of a pod is what a
// snapshot holds): the store on plain directories, the decision of what a commit takes, and a
// Pods whose instance lookup (plain data here; the apiserver's in the integration test) names
// the image a fresh envd starts from.

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});
const temp = async (prefix = "envd-snap-") => {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
};

const REPO = "registry.agentbox.test/agentbox-snapshots/ns/sbx1/main";

/** sample is a sandbox root with nested files, an executable, a symlink and an empty folder. */
async function sample(): Promise<string> {
  const root = await temp();
  await mkdir(join(root, "home/user/notes"), { recursive: true });
  await mkdir(join(root, "home/user/empty"), { recursive: true });
  await writeFile(join(root, "home/user/notes/a.txt"), "hello, file\n");
  await writeFile(join(root, "home/user/run.sh"), "#!/bin/sh\necho hi\n");
  await chmod(join(root, "home/user/run.sh"), 0o755);
  await symlink("notes/a.txt", join(root, "home/user/link"));
  await mkdir(join(root, "tmp"));
  await writeFile(join(root, "tmp/outside-home"), Buffer.alloc(4096, 7));
  return root;
}

describe("SnapshotStore", () => {
  it("saves a tree under its target and gives it back by digest or by tag, files, modes and links intact", async () => {
    const store = new SnapshotStore(await temp());
    const root = await sample();
    const saved = await store.save(root, `${REPO}:g1`);
    expect(saved.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(saved.bytes).toBe("hello, file\n".length + "#!/bin/sh\necho hi\n".length + 4096);
    for (const image of [`${REPO}:g1@${saved.digest}`, `${REPO}@${saved.digest}`, `${REPO}:g1`]) {
      const into = await temp();
      expect(await store.restore(image, into)).toBe(true);
      expect(await readFile(join(into, "home/user/notes/a.txt"), "utf8")).toBe("hello, file\n");
      expect((await stat(join(into, "home/user/run.sh"))).mode & 0o777).toBe(0o755);
      expect(await readlink(join(into, "home/user/link"))).toBe("notes/a.txt");
      expect((await stat(join(into, "home/user/empty"))).isDirectory()).toBe(true);
      expect(await treeDigest(into, `${REPO}:g1`)).toEqual(saved);
    }
  });

  it("names the same files at the same target by the same digest, and every other target by another", async () => {
    const store = new SnapshotStore(await temp());
    const root = await sample();
    const g1 = await store.save(root, `${REPO}:g1`);
    expect(await store.save(root, `${REPO}:g1`)).toEqual(g1);
    const g2 = await store.save(root, `${REPO}:g2`);
    expect(g2.digest).not.toBe(g1.digest);
    await writeFile(join(root, "home/user/notes/a.txt"), "changed\n");
    const changed = await store.save(root, `${REPO}:g1`);
    expect(changed.digest).not.toBe(g1.digest);
    // The tag moved: the save says which snapshot it named before (still held, by digest).
    expect(changed.replaced).toBe(g1.digest);
    expect(await store.has(`${REPO}@${g1.digest}`)).toBe(true);
    // Deleting g1 (by digest, as the agent deletes a stale image) leaves g2 whole.
    await store.remove(`${REPO}:g1@${g1.digest}`);
    expect(await store.has(`${REPO}@${g1.digest}`)).toBe(false);
    expect(await store.has(`${REPO}:g2@${g2.digest}`)).toBe(true);
  });

  it("removes a snapshot and the tags pointing at it; gone is not an error; a restore then finds nothing", async () => {
    const store = new SnapshotStore(await temp());
    const saved = await store.save(await sample(), `${REPO}:g3`);
    await store.remove(`${REPO}:g3@${saved.digest}`);
    await store.remove(`${REPO}:g3@${saved.digest}`);
    await store.remove(`${REPO}:g9`);
    expect(await store.restore(`${REPO}:g3`, await temp())).toBe(false);
    expect(await store.restore(`${REPO}@${saved.digest}`, await temp())).toBe(false);
    const again = await store.save(await sample(), `${REPO}:g4`);
    await store.remove(`${REPO}:g4`);
    expect(await store.has(`${REPO}@${again.digest}`)).toBe(false);
  });

  it("removes every snapshot of a repository and its tags, and nothing of another", async () => {
    const store = new SnapshotStore(await temp());
    const root = await sample();
    const g1 = await store.save(root, `${REPO}:g1`);
    const g2 = await store.save(root, `${REPO}:g2`);
    const other = await store.save(root, `${REPO}-other:g1`);
    await store.removeRepository(REPO);
    for (const image of [`${REPO}@${g1.digest}`, `${REPO}@${g2.digest}`, `${REPO}:g1`, `${REPO}:g2`])
      expect(await store.has(image), image).toBe(false);
    expect(await store.has(`${REPO}-other:g1@${other.digest}`)).toBe(true);
    // A repository the store never held, or held and emptied, is not an error.
    await store.removeRepository(REPO);
    await expect(store.removeRepository(`${REPO}:g1`)).rejects.toThrow(/names a tag or digest/);
  });

  it("counts layers as a registry would: a snapshot its base's plus one, a name's `layers-<N>`, else one", async () => {
    const store = new SnapshotStore(await temp());
    expect(await store.layers("registry.local/sandbox/base:1")).toBe(1);
    expect(await store.layers("registry.local/sandbox/layers-124:1")).toBe(124);
    expect(await store.layers(`registry.local/sandbox/layers-125@sha256:${"c".repeat(64)}`)).toBe(125);
    expect(await store.layers("Not A Reference layers-7")).toBe(7);
    const g1 = await store.save(await sample(), `${REPO}:g1`, 125);
    const g2 = await store.saveEmpty(`${REPO}:g2`, 3);
    expect(await store.layers(`${REPO}:g1@${g1.digest}`)).toBe(125);
    expect(await store.layers(`${REPO}:g1`)).toBe(125);
    expect(await store.layers(`${REPO}@${g2.digest}`)).toBe(3);
    // Gone, it counts as any image again; its record went with it.
    await store.remove(`${REPO}:g1@${g1.digest}`);
    expect(await store.layers(`${REPO}@${g1.digest}`)).toBe(1);
  });

  it("refuses a target that is not repository:tag, quoting it", async () => {
    const store = new SnapshotStore(await temp());
    const root = await sample();
    await expect(store.save(root, `${REPO}@sha256:${"a".repeat(64)}`)).rejects.toThrow(
      /must be repository:tag/,
    );
    await expect(store.save(root, "Not A Reference")).rejects.toThrow(/"Not A Reference"/);
  });
});

describe("a pod's instance (podInstance)", () => {
  it("gives the envd container's name and the image its spec names, beside the instance id", () => {
    const pod = {
      metadata: { uid: "u1", annotations: { "agentbox.navix.sh/sandbox-containers": "box, side" } },
      spec: {
        containers: [
          { name: "side", image: "side:1" },
          { name: "box", image: `${REPO}:g2` },
        ],
      },
      status: { containerStatuses: [{ name: "box", containerID: "containerd://b" }] },
    } as unknown as Parameters<typeof podInstance>[0];
    expect(podInstance(pod)).toEqual({ id: "u1/containerd://b", container: "box", image: `${REPO}:g2` });
    expect(podInstance({ metadata: { uid: "u2" } })).toEqual({ id: "u2/" });
  });
});

describe("what a commit takes (commitTake)", () => {
  const source = { podUID: "u1", container: "main", containerID: "containerd://c1" };
  const live = (id: string, container = "main"): Instance => ({ id, container });
  it("takes the files only when the envd served, and serves now, the container the pause names", () => {
    expect(
      commitTake("ip", { instance: "u1/containerd://c1" }, live("u1/containerd://c1"), source, true),
    ).toEqual({
      take: "files",
    });
    expect(commitTake("ip", undefined, live("u1/containerd://c1"), source, true)).toEqual({
      take: "none",
      reason: "the envd stand-in never served pod IP ip",
    });
    // The container restarted (or the pod was reset) since: the envd's files are another sandbox's.
    const restarted = commitTake(
      "ip",
      { instance: "u1/containerd://c1" },
      live("u1/containerd://c2"),
      source,
      true,
    );
    expect(restarted).toMatchObject({
      take: "none",
      reason: expect.stringContaining("now by u1/containerd://c2"),
    });
    const stale = commitTake(
      "ip",
      { instance: "u1/containerd://c0" },
      live("u1/containerd://c1"),
      source,
      true,
    );
    expect(stale).toMatchObject({ take: "none" });
    expect(
      commitTake("ip", { instance: "u1/containerd://c1" }, live("u2/containerd://c1"), source, true),
    ).toMatchObject({ take: "none", reason: expect.stringContaining("pod uid u1") });
    expect(commitTake("ip", { instance: "u1/containerd://c1" }, undefined, source, true)).toMatchObject({
      take: "none",
    });
  });

  it("commits another container of the pod as empty, and takes the files as they are with nothing to ask", () => {
    const other = { ...source, container: "sidecar", containerID: "containerd://s1" };
    expect(
      commitTake("ip", { instance: "u1/containerd://c1" }, live("u1/containerd://c1"), other, true),
    ).toEqual({
      take: "empty",
    });
    expect(commitTake("ip", { instance: undefined }, undefined, source, false)).toEqual({ take: "files" });
  });
});

describe("a stand-in's pods and snapshots", () => {
  /** stand-in is Pods with a store and a lookup over `instances` (ip → instance), logging into `lines`. */
  const standIn = async (instances: Map<string, Instance>) => {
    const root = await temp();
    const lines: string[] = [];
    const pods = new Pods(root, { processes: 4, watchers: 4 }, async (ip) => instances.get(ip), false, {
      snapshots: new SnapshotStore(join(root, "snapshots")),
      log: (line) => lines.push(line),
    });
    cleanup.push(() => pods.close());
    return { pods, lines };
  };
  const a = { podUID: "ua", container: "main", containerID: "containerd://a1" };

  it("restores a committed snapshot into a fresh envd whose instance runs it, and only there", async () => {
    const instances = new Map<string, Instance>([
      ["ip-a", { id: "ua/containerd://a1", container: "main", image: "base:1" }],
    ]);
    const { pods } = await standIn(instances);
    await pods.init("ip-a", { accessToken: "ta" });
    const sa = await pods.of("ip-a");
    await writeFile(join(sa.root.dir, "home/user/kept.txt"), "kept");
    const out = await pods.commit("ip-a", `${REPO}:g1`, a);
    if (!out.ok) throw new Error(out.reason);
    // Pod b: first served on its own image, then swapped in place to the snapshot (a resume).
    instances.set("ip-b", { id: "ub/containerd://b1", container: "main", image: "base:1" });
    await pods.init("ip-b", { accessToken: "tb" });
    await writeFile(join((await pods.of("ip-b")).root.dir, "home/user/planted"), "x");
    instances.set("ip-b", { id: "ub/containerd://b2", container: "main", image: `${REPO}:g1@${out.digest}` });
    expect(await pods.init("ip-b", { accessToken: "tb2" })).toEqual({ ok: true, applied: true });
    const sb = await pods.of("ip-b");
    expect(await readFile(join(sb.root.dir, "home/user/kept.txt"), "utf8")).toBe("kept");
    await expect(stat(join(sb.root.dir, "home/user/planted"))).rejects.toThrow(/ENOENT/);
    // The snapshot is a copy: b's writes never reach a's files or the store.
    await writeFile(join(sb.root.dir, "home/user/kept.txt"), "b's");
    expect(await readFile(join(sa.root.dir, "home/user/kept.txt"), "utf8")).toBe("kept");
  });

  it("starts empty, and says so, on a snapshot image the store does not hold", async () => {
    const instances = new Map<string, Instance>([
      ["ip-c", { id: "uc/containerd://c1", container: "main", image: `${REPO}:g7@sha256:${"b".repeat(64)}` }],
    ]);
    const { pods, lines } = await standIn(instances);
    const sc = await pods.of("ip-c");
    expect((await stat(join(sc.root.dir, "home/user"))).isDirectory()).toBe(true);
    expect(lines).toEqual([
      expect.stringMatching(
        /pod IP ip-c runs snapshot image .*g7@sha256:b+, which the stand-in does not hold/,
      ),
    ]);
  });

  it("refuses a commit once the pod's container changed, changing nothing", async () => {
    const instances = new Map<string, Instance>([
      ["ip-a", { id: "ua/containerd://a1", container: "main", image: "base:1" }],
    ]);
    const { pods } = await standIn(instances);
    await pods.init("ip-a", { accessToken: "ta" });
    instances.set("ip-a", { id: "ua/containerd://a2", container: "main", image: "base:2" });
    expect(await pods.commit("ip-a", `${REPO}:g1`, a)).toMatchObject({ ok: false });
    expect(await pods.commit("ip-never", `${REPO}:g1`, a)).toEqual({
      ok: false,
      reason: "the envd stand-in never served pod IP ip-never",
    });
  });
});

describe("standInCommitter over serveEnvd", () => {
  /**
   * served is a stand-in on 127.0.0.1 whose pod there runs container instance ua/containerd://a1
   * (`instances` changes that), its snapshots and a committer over them.
   */
  const served = async () => {
    const instances = new Map<string, Instance>([
      ["127.0.0.1", { id: "ua/containerd://a1", container: "main" }],
    ]);
    const envd = await serveEnvd({ host: "127.0.0.1", port: 0, instanceOf: async (ip) => instances.get(ip) });
    cleanup.push(() => new Promise<void>((done) => envd.server.close(() => done())));
    const snapshots = envd.snapshots;
    if (!snapshots) throw new Error("no snapshots");
    return {
      instances,
      snapshots,
      committer: standInCommitter(snapshots),
      base: `http://127.0.0.1:${envd.port}`,
    };
  };

  /** request is a commit of container `main` (ua/containerd://a1, running `image`) of pod ns/p to `target`. */
  const request = (image: string, target: string) => {
    const container = { name: "main", containerID: "containerd://a1", image };
    const source = {
      node: "kwok-node-0",
      pod: "p",
      podUID: "ua",
      podIP: "127.0.0.1",
      containers: [container],
    };
    return { namespace: "ns", sandboxId: "sbx1", source, container, target, created: "2026-12-02T10:00:00Z" };
  };

  it("answers target@digest and bytes, and the containerd backend's error for a container that is gone", async () => {
    const { instances, committer, base } = await served();
    /** write writes the sandbox's one file through envd's files API. */
    const write = async (body: string) => {
      const wrote = await fetch(`${base}/files?path=/home/user/x.txt`, {
        method: "POST",
        headers: { "content-type": "application/octet-stream" },
        body,
        signal: AbortSignal.timeout(5000),
      });
      expect(wrote.status).toBe(200);
    };
    await write("twelve bytes");
    const req = request("base:1", `${REPO}:g1`);
    const signal = AbortSignal.timeout(5000);
    const done = await committer.commit(req, signal);
    expect(done.image).toMatch(new RegExp(`^${REPO}:g1@sha256:[0-9a-f]{64}$`));
    expect(done.bytes).toBe(12);
    await committer.remove(done.image, signal);
    await committer.remove(done.image, signal);
    // Committed again over changed files, the tag moves, and the result names the image it replaced.
    const before = await committer.commit({ ...req, target: `${REPO}:g3` }, signal);
    expect(before.replaced).toBeUndefined();
    await write("changed");
    const after = await committer.commit({ ...req, target: `${REPO}:g3` }, signal);
    expect(after.image).not.toBe(before.image);
    expect(after.replaced).toBe(before.image);
    // A repository is emptied (twice: gone is not an error); only a snapshot repository.
    await committer.commit({ ...req, target: `${REPO}:g2` }, signal);
    await committer.removeRepository(REPO, signal);
    await committer.removeRepository(REPO, signal);
    await expect(
      committer.removeRepository("registry.agentbox.test/agentbox/sandbox-a", signal),
    ).rejects.toThrow(/not a snapshot repository/);
    const { podIP: _, ...noIP } = req.source;
    await expect(committer.commit({ ...req, source: noIP }, signal)).rejects.toThrow(
      /pod ns\/p has no podIP/,
    );
    instances.set("127.0.0.1", { id: "ua/containerd://a2", container: "main" });
    await expect(committer.commit(req, signal)).rejects.toThrow(
      "container containerd://a1 of pod ns/p is gone: pod IP 127.0.0.1 was served by container instance ua/containerd://a1, now by ua/containerd://a2",
    );
    await expect(committer.commit(req, AbortSignal.abort())).rejects.toThrow(/abort/i);
  });

  it("refuses a pause past the layer limit before saving anything; a snapshot counts its base's layers plus one", async () => {
    const { snapshots, committer, base } = await served();
    const init = await fetch(`${base}/init`, {
      method: "POST",
      body: JSON.stringify({ accessToken: "t", envVars: {} }),
      signal: AbortSignal.timeout(5000),
    });
    expect(init.status).toBe(204);
    const signal = AbortSignal.timeout(5000);
    // A base of 124 layers pauses into a snapshot of 125, the limit.
    const at = await committer.commit(request("registry.local/sandbox/layers-124:1", `${REPO}:g1`), signal);
    expect(await snapshots.layers(at.image)).toBe(125);
    // That snapshot (a resumed sandbox runs it) cannot pause again, nor can a base of 125.
    for (const [image, target] of [
      [at.image, `${REPO}:g2`],
      ["registry.local/sandbox/layers-125:1", `${REPO}:g3`],
    ] as const) {
      await expect(committer.commit(request(image, target), signal)).rejects.toThrow(
        `the sandbox's image has 125 layers; a pause adds one and 126 exceeds the limit of 125: a container runtime could not mount the snapshot to resume it (image ${image})`,
      );
      // Nothing saved at the target: held, it would count 126.
      expect(await snapshots.layers(target)).toBe(1);
    }
  });
});
