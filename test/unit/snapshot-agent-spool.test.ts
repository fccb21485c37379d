import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cleanSpool, ctrDiff, SPOOL_FILE, SPOOL_PREFIX } from "../../hosts/node/ctr-diff.ts";

// The snapshot agent's spool (hosts/node/ctr-diff.ts): a commit writes the container's layer to a
// directory of its own in the agent's tmp dir before the push, and removes it after. An agent that
// dies mid-commit leaves it; the next one removes it at start, and nothing else of the tmp dir.

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});
const temp = async () => {
  const dir = await mkdtemp(join(tmpdir(), "spool-test-"));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
};
const exists = (path: string) =>
  lstat(path).then(
    () => true,
    () => false,
  );

/** fakeCtr is a ctr whose `snapshots diff` prints a fixed layer (the spool is what is under test). */
async function fakeCtr(dir: string): Promise<string> {
  const path = join(dir, "ctr");
  await writeFile(path, "#!/bin/sh\nprintf 'a layer tar'\n");
  await chmod(path, 0o755);
  return path;
}

describe("cleanSpool", () => {
  it("removes the spool a commit left (an agent that died before disposing of it)", async () => {
    const tmp = await temp();
    const bin = await temp();
    const diff = ctrDiff({ ctr: await fakeCtr(bin), address: "/nowhere.sock", tmpDir: tmp });
    const layer = await diff("c1", AbortSignal.timeout(10_000));
    if ("gone" in layer) throw new Error(`unexpected: ${layer.gone}`);
    // The agent dies here, before dispose(): its directory and layer file stay.
    const [left] = await readdir(tmp);
    expect(left).toMatch(new RegExp(`^${SPOOL_PREFIX}`));
    expect(await readFile(join(tmp, left ?? "", SPOOL_FILE), "utf8")).toBe("a layer tar");

    expect(await cleanSpool(tmp)).toEqual({ removed: [join(tmp, left ?? "")], left: [] });
    expect(await readdir(tmp)).toEqual([]);
    expect(await cleanSpool(tmp)).toEqual({ removed: [], left: [] });
  });

  it("touches only the spool directories it names, each holding at most its layer file", async () => {
    const tmp = await temp();
    const elsewhere = await temp();
    const spool = (name: string) => join(tmp, `${SPOOL_PREFIX}${name}`);
    // Its own: with a (partial) layer file, and empty (died before writing).
    await mkdir(spool("AbC123"));
    await writeFile(join(spool("AbC123"), SPOOL_FILE), "partial");
    await mkdir(spool("xyz789"));
    // Named like one but holding another file, or a layer "file" that is a directory: not a commit's.
    await mkdir(spool("Other1"));
    await writeFile(join(spool("Other1"), SPOOL_FILE), "x");
    await writeFile(join(spool("Other1"), "notes.txt"), "someone's");
    await mkdir(join(spool("DirLay"), SPOOL_FILE), { recursive: true });
    await writeFile(join(spool("DirLay"), SPOOL_FILE, "inside"), "kept");
    // Not its names: another length, a plain file, a symlink to a spool-like directory, others.
    await mkdir(spool("toolong1"));
    await writeFile(join(spool("toolong1"), SPOOL_FILE), "kept");
    await writeFile(spool("File12"), "a file, not a directory");
    await writeFile(join(elsewhere, SPOOL_FILE), "not in the tmp dir");
    await symlink(elsewhere, spool("Link12"));
    await mkdir(join(tmp, "unrelated"));
    await writeFile(join(tmp, SPOOL_FILE), "kept");

    const out = await cleanSpool(tmp);
    expect(out.removed.sort()).toEqual([spool("AbC123"), spool("xyz789")].sort());
    expect(out.left.sort()).toEqual([spool("DirLay"), spool("Other1")].sort());
    expect(await exists(spool("AbC123"))).toBe(false);
    expect(await exists(spool("xyz789"))).toBe(false);
    expect(await readFile(join(spool("Other1"), SPOOL_FILE), "utf8")).toBe("x");
    expect(await readFile(join(spool("Other1"), "notes.txt"), "utf8")).toBe("someone's");
    expect(await readFile(join(spool("DirLay"), SPOOL_FILE, "inside"), "utf8")).toBe("kept");
    expect(await readFile(join(spool("toolong1"), SPOOL_FILE), "utf8")).toBe("kept");
    expect(await readFile(spool("File12"), "utf8")).toBe("a file, not a directory");
    expect(await readFile(join(elsewhere, SPOOL_FILE), "utf8")).toBe("not in the tmp dir");
    expect((await lstat(spool("Link12"))).isSymbolicLink()).toBe(true);
    expect(await exists(join(tmp, "unrelated"))).toBe(true);
    expect(await readFile(join(tmp, SPOOL_FILE), "utf8")).toBe("kept");
  });

  it("finds nothing to remove in a tmp dir that does not exist", async () => {
    const tmp = await temp();
    expect(await cleanSpool(join(tmp, "missing"))).toEqual({ removed: [], left: [] });
  });
});
