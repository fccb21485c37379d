import { createHash } from "node:crypto";
import { Transform } from "node:stream";

/**
 * hashingStream passes chunks on while hashing (sha256) and counting them, so a blob streamed to
 * a file or a registry has its digest and size without being held in memory (the images' layers,
 * a pause's layer from `ctr snapshots diff`).
 */
export function hashingStream(): { stream: Transform; digest: () => string; size: () => number } {
  const hash = createHash("sha256");
  let size = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, next) {
      hash.update(chunk);
      size += chunk.length;
      next(null, chunk);
    },
  });
  return { stream, digest: () => `sha256:${hash.digest("hex")}`, size: () => size };
}
