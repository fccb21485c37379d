// A registry of a test's own: the project's docker-registry (distribution 2.8, the binary the
// real node's registry runs) on a free loopback port with its storage in a temporary directory.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RegistryClient } from "../../../functions/snapshots/registry-client.ts";
import { freePorts } from "../../../infra/cluster/ports.ts";
import { REGISTRY_BIN } from "../../../infra/cluster/real-node/real-node.ts";
import { registryConfig } from "../../../infra/cluster/real-node/runtime-configs.ts";
import { OCI_MEDIA } from "../../../lib/snapshots/image-build.ts";
import { until } from "./kube.ts";

/** RegistryProcess is a running registry: its URL, and stop (the process ended, its storage gone). */
export interface RegistryProcess {
  url: string;
  stop(): Promise<void>;
}

/** startRegistry starts a registry and answers once it serves /v2/; `deletes: false` refuses deletes (405). */
export async function startRegistry(o: { deletes?: boolean } = {}): Promise<RegistryProcess> {
  const storage = await mkdtemp(join(tmpdir(), "agentbox-test-registry-"));
  const [port] = await freePorts(1);
  const config = registryConfig(port ?? 0, join(storage, "data"), { deletes: o.deletes ?? true });
  await writeFile(join(storage, "registry.yml"), config);
  const child = spawn(REGISTRY_BIN, ["serve", join(storage, "registry.yml")], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (c: Buffer) => {
    stderr = (stderr + c.toString("utf8")).slice(-2000);
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    await rm(storage, { recursive: true, force: true });
  };
  try {
    await until("the registry serving", 30_000, async () => {
      if (child.exitCode !== null) throw new Error(`the registry exited ${child.exitCode}: ${stderr}`);
      const res = await fetch(`${url}/v2/`, { signal: AbortSignal.timeout(2_000) });
      await res.body?.cancel();
      return res.ok;
    });
  } catch (e) {
    await stop();
    throw e;
  }
  return { url, stop };
}

const sha256 = (b: Uint8Array) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

/**
 * pushImage puts an image of `count` small layers in `registryName` (as `client` reaches it) as
 * `repository:tag`, and answers it by digest (`<registryName>/<repository>@sha256:...`).
 */
export async function pushImage(
  client: RegistryClient,
  registryName: string,
  repository: string,
  tag: string,
  count = 1,
): Promise<string> {
  const signal = () => AbortSignal.timeout(30_000);
  const layers = Array.from({ length: count }, (_, i) =>
    new TextEncoder().encode(i === 0 ? "the base image's files\n" : `layer ${i} of the base image\n`),
  );
  const config = new TextEncoder().encode(
    JSON.stringify({
      architecture: "amd64",
      os: "linux",
      config: { Entrypoint: ["/bin/sh"] },
      rootfs: { type: "layers", diff_ids: layers.map((l) => sha256(l)) },
      history: layers.map(() => ({ created_by: "ADD base" })),
    }),
  );
  for (const blob of [...layers, config])
    await client.uploadBlob(registryName, repository, sha256(blob), blob.length, blob, signal());
  const manifest = JSON.stringify({
    schemaVersion: 2,
    mediaType: OCI_MEDIA.manifest,
    config: { mediaType: OCI_MEDIA.config, digest: sha256(config), size: config.length },
    layers: layers.map((l) => ({ mediaType: OCI_MEDIA.layer, digest: sha256(l), size: l.length })),
  });
  const digest = await client.putManifest(
    registryName,
    repository,
    tag,
    manifest,
    OCI_MEDIA.manifest,
    signal(),
  );
  return `${registryName}/${repository}@${digest}`;
}
