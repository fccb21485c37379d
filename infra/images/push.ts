/**
 * push.ts copies the built images from their OCI layout to a registry with skopeo, over plain
 * HTTP (the local registry listens on loopback without TLS), keeping the manifests' digests, so
 * what kubelet reports as imageID is the digest buildImages returned. Images are pushed one after
 * another: they share their base and runtime layers, which the first push uploads and the
 * registry then already holds.
 */
import { spawn } from "node:child_process";
import type { BuiltImage } from "./build-images.ts";

/** PUSH_TIMEOUT_MS bounds one image's copy (the first carries the ~130 MB runtime layer). */
const PUSH_TIMEOUT_MS = 120_000;

/** skopeo runs skopeo with args, bounded by timeoutMs; rejects with its output on failure. */
function skopeo(args: string[], timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("skopeo", args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const keep = (c: Buffer) => {
      output = (output + c.toString("utf8")).slice(-4000);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`skopeo ${args.join(" ")}: no answer within ${timeoutMs} ms\n${output}`));
    }, timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(new Error(`skopeo: ${e.message} (install it: apt-get install skopeo)`));
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`skopeo ${args.join(" ")} exited ${code}: ${output.trim()}`));
    });
  });
}

/**
 * pushImages pushes each image of the layout to `<registryHostPort>/<name>:<tag>` (HTTP, no TLS
 * verification), preserving digests.
 */
export async function pushImages(
  layoutDir: string,
  images: readonly BuiltImage[],
  registryHostPort: string,
  log: (line: string) => void,
): Promise<void> {
  for (const image of images) {
    const started = performance.now();
    const dest = `${registryHostPort}/${image.name}:${image.tag}`;
    await skopeo(
      [
        "copy",
        "--quiet",
        "--preserve-digests",
        "--dest-tls-verify=false",
        `oci:${layoutDir}:${image.name}:${image.tag}`,
        `docker://${dest}`,
      ],
      PUSH_TIMEOUT_MS,
    );
    log(`images: pushed ${dest} (${image.digest}) in ${Math.round(performance.now() - started)} ms`);
  }
}
