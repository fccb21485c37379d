/**
 * snapshot-store.ts is what a snapshot image holds on kwok: there is no container runtime to
 * commit a writable layer, so the envd stand-in's directory of a pod is the container's
 * filesystem, and a "commit" copies that directory into this store under the image reference a
 * real node would push (issue #39, the `stand-in` backend of ADR 0045). A pod whose sandbox
 * container later runs that image (by digest or by tag) gets a copy of it as its fresh
 * directory (pods.ts), as a real node would unpack the pulled image.
 *
 * Layout under the store's root, one folder per repository (references are read by
 * lib/snapshots/image-names.ts): `sha256-<hex>/` is one snapshot's tree and `tag-<tag>` holds the
 * digest a tag points at. The digest is sha256 over the target reference and a deterministic
 * listing of the tree (kind, mode, path, and each file's size and content hash, or a symlink's
 * target). The target is part of it because on a real node every pause is a new manifest (one
 * layer more on the image the container ran), so two pauses never share a digest and deleting
 * the earlier one's image (by digest) never takes the later one's; the same files committed to
 * the same target again give the same digest. Repositories never share a snapshot either. Sockets, FIFOs and devices are not
 * files a layer would carry here and are left out.
 *
 * Layers are counted as a registry would (a pause's layer limit, image-build.ts
 * MAX_IMAGE_LAYERS): a snapshot has the layers of the image it was committed over plus one,
 * recorded beside its tree as `sha256-<hex>.layers`; any other image has the N of a `layers-<N>`
 * its reference contains (kwok's images are names only, as `unpullable` makes one fail to pull),
 * else one.
 */
import { createHash, randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import {
  cp,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  stat,
  writeFile,
} from "node:fs/promises";
import { join } from "node:path";
import { type ImageReference, parseImageReference } from "../../../lib/snapshots/image-names.ts";

/** SavedSnapshot is a commit's outcome: the snapshot's digest (`sha256:<hex>`) and its files' bytes. */
export interface SavedSnapshot {
  digest: string;
  bytes: number;
  /** replaced: the digest the tag named before, when another (its tree stays; the caller removes it). */
  replaced?: string;
}

/** repositoryOf is a parsed reference's full repository, with its registry host. */
const repositoryOf = (ref: ImageReference) => `${ref.registry}/${ref.repository}`;

/** treeName is a snapshot's folder name in its repository's: its digest with `-` for `:`. */
const treeName = (digest: string) => digest.replace(":", "-");

/** SnapshotStore keeps the stand-in's snapshots in a directory of its own. */
export class SnapshotStore {
  readonly root: string;
  constructor(root: string) {
    this.root = root;
  }

  /**
   * save copies dir (a sandbox's root) into the store as the image `target` (`repo:tag`) of
   * `layers` layers, then points the tag at it. The digest is the copy's, so it names exactly
   * what a restore gives.
   */
  async save(dir: string, target: string, layers = 1): Promise<SavedSnapshot> {
    const ref = parseImageReference(target);
    if (ref.digest !== undefined || ref.tag === undefined)
      throw new Error(`target ${JSON.stringify(target)} must be repository:tag (no digest)`);
    const repoDir = this.repoDir(ref);
    await mkdir(repoDir, { recursive: true });
    const staging = join(repoDir, `.staging-${randomBytes(6).toString("hex")}`);
    try {
      await cp(dir, staging, {
        recursive: true,
        verbatimSymlinks: true,
        preserveTimestamps: true,
        filter: async (src) => {
          const s = await lstat(src);
          return s.isFile() || s.isDirectory() || s.isSymbolicLink();
        },
      });
      const saved = await treeDigest(staging, target);
      const final = join(repoDir, treeName(saved.digest));
      // The same files again: the snapshot already there is this one.
      if (await exists(final)) await rm(staging, { recursive: true, force: true });
      else await rename(staging, final);
      await writeFile(`${final}.layers`, String(layers));
      const before = await this.tagged(repoDir, ref.tag);
      await writeFile(join(repoDir, `tag-${ref.tag}`), saved.digest);
      return before && before !== saved.digest ? { ...saved, replaced: before } : saved;
    } catch (e) {
      await rm(staging, { recursive: true, force: true });
      throw e;
    }
  }

  /** saveEmpty saves an empty tree as the image `target` of `layers` layers (a container without changes). */
  async saveEmpty(target: string, layers = 1): Promise<SavedSnapshot> {
    await mkdir(this.root, { recursive: true });
    const empty = await mkdtemp(join(this.root, ".empty-"));
    try {
      return await this.save(empty, target, layers);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  }

  /**
   * restore copies the snapshot `image` names (by digest, else by tag) into dir; false when the
   * store does not hold it (never saved, or removed).
   */
  async restore(image: string, dir: string): Promise<boolean> {
    const tree = await this.treeOf(parseImageReference(image));
    if (!tree) return false;
    await cp(tree, dir, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true, force: true });
    return true;
  }

  /**
   * layers is how many layers `image` has: a snapshot the store holds, those recorded at its
   * commit; any other image, the N of a `layers-<N>` in its reference, else one.
   */
  async layers(image: string): Promise<number> {
    let ref: ImageReference | undefined;
    try {
      ref = parseImageReference(image);
    } catch {
      // Not a reference the store could hold: only its name counts.
    }
    const tree = ref && (await this.treeOf(ref));
    const recorded = tree ? Number(await readFile(`${tree}.layers`, "utf8").catch(() => "")) : 0;
    if (Number.isSafeInteger(recorded) && recorded > 0) return recorded;
    const named = Number(/(?:^|[^a-z0-9])layers-(\d+)/.exec(image)?.[1] ?? "1");
    return Number.isSafeInteger(named) && named > 0 ? named : 1;
  }

  /** has says whether the store holds the snapshot `image` names. */
  async has(image: string): Promise<boolean> {
    return (await this.treeOf(parseImageReference(image))) !== undefined;
  }

  /**
   * remove deletes the snapshot `image` names (by digest, else the one its tag points at) and
   * the tags pointing at it; one already gone is not an error.
   */
  async remove(image: string): Promise<void> {
    const ref = parseImageReference(image);
    const repoDir = this.repoDir(ref);
    const digest = ref.digest ?? (ref.tag === undefined ? undefined : await this.tagged(repoDir, ref.tag));
    if (!digest) return;
    await rm(join(repoDir, treeName(digest)), { recursive: true, force: true });
    await rm(join(repoDir, `${treeName(digest)}.layers`), { force: true });
    const names = await readdir(repoDir).catch(() => [] as string[]);
    for (const name of names.filter((n) => n.startsWith("tag-")))
      if ((await this.tagged(repoDir, name.slice("tag-".length))) === digest)
        await rm(join(repoDir, name), { force: true });
  }

  /**
   * removeRepository deletes every snapshot of a repository (`<registry>/<repository>`, no tag
   * or digest) and its tags, recorded anywhere or not; one the store never held is not an error.
   */
  async removeRepository(repository: string): Promise<void> {
    const ref = parseImageReference(repository);
    if (ref.digest !== undefined || repository.slice(repository.lastIndexOf("/")).includes(":"))
      throw new Error(`${JSON.stringify(repository)} is not a repository (it names a tag or digest)`);
    await rm(this.repoDir(ref), { recursive: true, force: true });
  }

  /** treeOf is the directory of the snapshot ref names, when the store holds it. */
  private async treeOf(ref: ImageReference): Promise<string | undefined> {
    const repoDir = this.repoDir(ref);
    const digest = ref.digest ?? (ref.tag === undefined ? undefined : await this.tagged(repoDir, ref.tag));
    if (!digest) return undefined;
    const tree = join(repoDir, treeName(digest));
    return (await exists(tree)) ? tree : undefined;
  }

  /** tagged is the digest a tag of the repository points at. */
  private async tagged(repoDir: string, tag: string): Promise<string | undefined> {
    const digest = await readFile(join(repoDir, `tag-${tag}`), "utf8").catch(() => undefined);
    return digest?.startsWith("sha256:") ? digest : undefined;
  }

  /** repoDir is a repository's folder (named by a hash of it, so any reference fits a file name). */
  private repoDir(ref: ImageReference): string {
    return join(this.root, createHash("sha256").update(repositoryOf(ref)).digest("hex").slice(0, 32));
  }
}

/**
 * treeDigest is sha256 over `salt` and dir's listing (entries in byte order of their paths: kind,
 * mode, path, then a file's size and content sha256 or a symlink's target), and the bytes of its
 * files.
 */
export async function treeDigest(dir: string, salt = ""): Promise<SavedSnapshot> {
  const listing = createHash("sha256").update(`${salt}\0`);
  let bytes = 0;
  const walk = async (rel: string): Promise<void> => {
    const names = (await readdir(join(dir, rel))).sort((a, b) =>
      Buffer.compare(Buffer.from(a), Buffer.from(b)),
    );
    for (const name of names) {
      const path = rel ? `${rel}/${name}` : name;
      const full = join(dir, path);
      const s = await lstat(full);
      const mode = (s.mode & 0o7777).toString(8);
      if (s.isDirectory()) {
        listing.update(`d ${mode} ${path}\0`);
        await walk(path);
      } else if (s.isSymbolicLink()) {
        listing.update(`l ${mode} ${path} ${await readlink(full)}\0`);
      } else if (s.isFile()) {
        bytes += s.size;
        listing.update(`f ${mode} ${path} ${s.size} ${await fileSha256(full)}\0`);
      }
    }
  };
  await walk("");
  return { digest: `sha256:${listing.digest("hex")}`, bytes };
}

/** fileSha256 hashes a file as a stream (snapshots may hold large files). */
function fileSha256(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash("sha256");
    createReadStream(path)
      .on("data", (c) => h.update(c))
      .on("end", () => resolve(h.digest("hex")))
      .on("error", reject);
  });
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
