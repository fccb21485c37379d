/**
 * blobs.ts stores blobs in an OCI layout's `blobs/sha256/`: a layer's tar archive (tar.ts,
 * written by tar-stream) is streamed through sha256 (its diffID), optionally gzip (`gzip -n`'s
 * equivalent: zlib writes no name and mtime 0), and sha256 again (its digest), to a temporary
 * file renamed to its digest, so the ~130 MB runtime layer is never held twice in memory.
 */
import { createWriteStream } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { constants, createGzip } from "node:zlib";
import { hashingStream } from "../../hosts/node/hashing-stream.ts";
import { type Blob, type Descriptor, MEDIA } from "./oci-layout.ts";
import { type TarEntry, tarStream } from "./tar.ts";

/** Compression is how layers are stored: none (fastest here: build, push and pull on one machine) or gzip. */
export type Compression = "none" | "gzip";

/** blobPath is where a digest's blob lives in a layout. */
export function blobPath(layoutDir: string, digest: string): string {
  const [algo, hex] = digest.split(":");
  return join(layoutDir, "blobs", algo ?? "", hex ?? "");
}

/** writeBlob stores a document blob. */
export async function writeBlob(layoutDir: string, blob: Blob): Promise<Descriptor> {
  await mkdir(join(layoutDir, "blobs", "sha256"), { recursive: true });
  await writeFile(blobPath(layoutDir, blob.descriptor.digest), blob.bytes);
  return blob.descriptor;
}

/** writeLayer stores a layer made of entries; its descriptor and diffID (the uncompressed digest). */
export async function writeLayer(
  layoutDir: string,
  entries: readonly TarEntry[],
  compression: Compression,
): Promise<{ descriptor: Descriptor; diffId: string }> {
  const dir = join(layoutDir, "blobs", "sha256");
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `.layer-${process.pid}-${Math.random().toString(36).slice(2)}`);
  const raw = hashingStream();
  const stored = hashingStream();
  const source = tarStream(entries);
  const out = createWriteStream(tmp);
  if (compression === "gzip")
    await pipeline(source, raw.stream, createGzip({ level: constants.Z_BEST_SPEED }), stored.stream, out);
  else await pipeline(source, raw.stream, stored.stream, out);
  const digest = compression === "gzip" ? stored.digest() : raw.digest();
  const diffId = compression === "gzip" ? raw.digest() : digest;
  await rename(tmp, blobPath(layoutDir, digest));
  return {
    descriptor: {
      mediaType: compression === "gzip" ? MEDIA.layerGzip : MEDIA.layer,
      digest,
      size: stored.size(),
    },
    diffId,
  };
}
