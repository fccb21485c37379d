/**
 * build-images.ts builds the sandbox images (rootfs.ts) into an OCI image layout, once per set of
 * inputs: the cache key hashes the recipe (this folder's sources), busybox and its applet list,
 * Node and the libraries it links, and the envd bundle (infra/dev/envd/container-main.ts, bundled
 * with esbuild, which also covers envd's sources). A warm cache costs the hashing (well under a
 * second) and builds nothing. The layout is built in a temporary directory beside the cache
 * entry and renamed into place, so concurrent builders never see or leave half a layout.
 *
 * `node infra/images/build-images.ts` builds (or finds) the layout and prints it.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { blobPath, type Compression, writeBlob, writeLayer } from "./blobs.ts";
import {
  type Descriptor,
  imageConfig,
  imageManifest,
  layoutIndex,
  OCI_LAYOUT,
  REF_NAME,
} from "./oci-layout.ts";
import { IMAGE_REPOSITORY_PREFIX } from "./refs.ts";
import {
  baseLayer,
  IMAGE_NAMES,
  IMAGE_TAG,
  layersOf,
  parseLdd,
  type RuntimeInputs,
  runOf,
  runtimeLayer,
  topLayer,
} from "./rootfs.ts";

/** BuiltImage is one image of the layout: `agentbox/<name>`, its tag, its manifest digest. */
export interface BuiltImage {
  name: string;
  tag: string;
  digest: string;
}

/** BuiltImages is the layout (an OCI image layout directory) and the images in it. */
export interface BuiltImages {
  layoutDir: string;
  images: BuiltImage[];
}

/** COMPRESSION: uncompressed layers build in ~1 s and push and pull as fast as gzip's here (README.md). */
const COMPRESSION: Compression = "none";
/** FORMAT changes when the layout's shape changes without any input changing. */
const FORMAT = "agentbox-images/1";
const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, "..", "..");
const TOOL_TIMEOUT_MS = 30_000;

/** cacheRoot is where layouts are kept: $AGENTBOX_BIN_CACHE, else $XDG_CACHE_HOME or ~/.cache, /agentbox-functions/images. */
export function cacheRoot(): string {
  const base =
    process.env.AGENTBOX_BIN_CACHE ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "agentbox-functions");
  return join(base, "images");
}

/** run runs a tool to completion (bounded) and returns its stdout, or throws with its stderr. */
function run(file: string, args: string[]): string {
  const r = spawnSync(file, args, { encoding: "utf8", timeout: TOOL_TIMEOUT_MS, maxBuffer: 16 << 20 });
  if (r.error) throw new Error(`${file} ${args.join(" ")}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${file} ${args.join(" ")} exited ${r.status}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** findBusybox is Debian's busybox-static (`apt-get install busybox-static`). */
async function findBusybox(): Promise<string> {
  for (const p of ["/usr/bin/busybox", "/bin/busybox"]) if (await stat(p).catch(() => undefined)) return p;
  throw new Error("busybox not found: install busybox-static (apt-get install busybox-static)");
}

/** bundleEnvd bundles the in-container envd into one ESM file without Kubernetes' client. */
async function bundleEnvd(): Promise<Uint8Array> {
  const esbuild = await import("esbuild");
  const out = await esbuild.build({
    entryPoints: [join(REPO, "infra/dev/envd/container-main.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    write: false,
    legalComments: "none",
    logLevel: "silent",
  });
  const file = out.outputFiles[0];
  if (!file) throw new Error("esbuild produced no envd bundle");
  const code = file.text;
  if (code.includes("@kubernetes/client-node"))
    throw new Error("the envd bundle pulls in @kubernetes/client-node");
  return new TextEncoder().encode(
    `// agentbox envd stand-in (infra/dev/envd/container-main.ts), bundled.\n${code}`,
  );
}

/** Inputs are everything an image is made of, read from this machine. */
interface Inputs {
  busybox: Uint8Array;
  applets: string[];
  runtime: RuntimeInputs;
  recipe: { path: string; text: string }[];
}

async function readInputs(): Promise<Inputs> {
  const busyboxPath = await findBusybox();
  const nodePath = join(REPO, "node_modules/node/bin/node");
  const libPaths = parseLdd(run("ldd", [nodePath]));
  if (!libPaths.some((p) => p.includes("ld-linux"))) throw new Error(`ldd ${nodePath}: no loader listed`);
  const recipe = await Promise.all(
    (await readdir(HERE))
      .filter((f) => f.endsWith(".ts"))
      .sort()
      .map(async (f) => ({ path: f, text: await readFile(join(HERE, f), "utf8") })),
  );
  return {
    busybox: await readFile(busyboxPath),
    applets: run(busyboxPath, ["--list"]).split("\n").filter(Boolean).sort(),
    runtime: {
      node: await readFile(nodePath),
      libs: await Promise.all(libPaths.map(async (path) => ({ path, data: await readFile(path) }))),
      envd: await bundleEnvd(),
    },
    recipe,
  };
}

/** tarStreamVersion is the installed tar-stream's version (its package.json). */
function tarStreamVersion(): string {
  const pkg = readFileSync(join(REPO, "node_modules", "tar-stream", "package.json"), "utf8");
  return (JSON.parse(pkg) as { version: string }).version;
}

/** cacheKey hashes every input of the layout. */
function cacheKey(inputs: Inputs): string {
  const h = createHash("sha256");
  const part = (label: string, data: Uint8Array | string) => {
    const bytes = typeof data === "string" ? Buffer.from(data) : data;
    h.update(`${label}\0${bytes.length}\0`);
    h.update(bytes);
  };
  part("format", `${FORMAT} ${COMPRESSION}`);
  for (const r of inputs.recipe) part(`recipe ${r.path}`, r.text);
  part("busybox", inputs.busybox);
  part("applets", inputs.applets.join("\n"));
  part("node", inputs.runtime.node);
  for (const l of inputs.runtime.libs) part(`lib ${l.path}`, l.data);
  part("envd", inputs.runtime.envd);
  // The tar writer shapes every header: a new version may write other bytes.
  part("tar-stream", tarStreamVersion());
  return h.digest("hex").slice(0, 32);
}

/** writeLayout builds every image into dir (an empty or absent directory). */
async function writeLayout(dir: string, inputs: Inputs): Promise<BuiltImage[]> {
  const base = await writeLayer(dir, baseLayer(inputs.busybox, inputs.applets), COMPRESSION);
  const runtime = await writeLayer(dir, runtimeLayer(inputs.runtime), COMPRESSION);
  const images: BuiltImage[] = [];
  const index: { refName: string; manifest: Descriptor }[] = [];
  for (const name of IMAGE_NAMES) {
    const top = await writeLayer(dir, topLayer(name), COMPRESSION);
    const layers = layersOf(name).map((l) => (l === "base" ? base : l === "runtime" ? runtime : top));
    const config = await writeBlob(
      dir,
      imageConfig(
        runOf(name),
        layers.map((l) => l.diffId),
      ),
    );
    const manifest = await writeBlob(
      dir,
      imageManifest(
        config,
        layers.map((l) => l.descriptor),
      ),
    );
    index.push({ refName: `${IMAGE_REPOSITORY_PREFIX}/${name}:${IMAGE_TAG}`, manifest });
    images.push({ name: `${IMAGE_REPOSITORY_PREFIX}/${name}`, tag: IMAGE_TAG, digest: manifest.digest });
  }
  await writeFile(join(dir, "index.json"), layoutIndex(index).bytes);
  await writeFile(join(dir, "oci-layout"), OCI_LAYOUT);
  return images;
}

/** readLayout lists the images of a finished layout from its index.json. */
async function readLayout(dir: string): Promise<BuiltImage[]> {
  const index = JSON.parse(await readFile(join(dir, "index.json"), "utf8")) as {
    manifests: { digest: string; annotations?: Record<string, string> }[];
  };
  return index.manifests.map((m) => {
    const ref = m.annotations?.[REF_NAME] ?? "";
    const at = ref.lastIndexOf(":");
    return { name: ref.slice(0, at), tag: ref.slice(at + 1), digest: m.digest };
  });
}

/** prune removes layouts of other keys and abandoned temporary builds older than an hour. */
async function prune(root: string, keep: string): Promise<void> {
  const hourAgo = Date.now() - 3_600_000;
  for (const entry of await readdir(root)) {
    if (entry === keep) continue;
    const path = join(root, entry);
    const st = await stat(path).catch(() => undefined);
    if (st && st.mtimeMs < hourAgo) await rm(path, { recursive: true, force: true });
  }
}

/**
 * buildImages returns the images' OCI layout, building it when no layout of the same inputs is
 * cached. Layouts of other inputs untouched for an hour are removed.
 */
export async function buildImages(log: (line: string) => void): Promise<BuiltImages> {
  const started = performance.now();
  const inputs = await readInputs();
  const key = cacheKey(inputs);
  const root = cacheRoot();
  const layoutDir = join(root, key);
  if (await stat(join(layoutDir, "index.json")).catch(() => undefined)) {
    log(`images: cached at ${layoutDir} (checked in ${Math.round(performance.now() - started)} ms)`);
    return { layoutDir, images: await readLayout(layoutDir) };
  }
  const tmp = join(root, `.tmp-${key}-${process.pid}-${Math.random().toString(36).slice(2)}`);
  try {
    const images = await writeLayout(tmp, inputs);
    await rename(tmp, layoutDir).catch(async (e: NodeJS.ErrnoException) => {
      // Another builder finished the same key first: its layout is the same bytes.
      if (e.code !== "ENOTEMPTY" && e.code !== "EEXIST") throw e;
      await rm(tmp, { recursive: true, force: true });
    });
    for (const i of images) await stat(blobPath(layoutDir, i.digest));
    log(
      `images: built ${images.length} images in ${Math.round(performance.now() - started)} ms at ${layoutDir}`,
    );
    await prune(root, key).catch((e: unknown) => log(`images: pruning ${root}: ${String(e)}`));
    return { layoutDir, images };
  } catch (e) {
    await rm(tmp, { recursive: true, force: true });
    throw e;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const built = await buildImages((line) => process.stderr.write(`${line}\n`));
  process.stdout.write(`${JSON.stringify(built, null, 2)}\n`);
}
