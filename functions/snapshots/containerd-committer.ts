// The real node's committer (ADR 0045): containerd already holds a running container's writable
// layer as the active snapshot named after the container, so `ctr snapshots diff <id>` gives its
// changes as an OCI layer tar (deletions as whiteouts) without stopping it. The snapshot image is
// the image the container runs with that layer appended; base layers are mounted from the base
// repository (the registry links them, no bytes move), the layer and the new config uploaded,
// the manifest put at the target tag. Running ctr and spooling its output is the host's
// (hosts/node/ctr-diff.ts): nothing here touches a process or a file.
import {
  layerLimitError,
  OCI_MEDIA,
  parseManifest,
  pickPlatform,
  snapshotDocuments,
} from "../../lib/snapshots/image-build.ts";
import {
  isSnapshotImage,
  parseImageReference,
  parseSnapshotRepository,
} from "../../lib/snapshots/image-names.ts";
import type { CommitRequest, CommitResult, Committer } from "./committer.ts";
import type { RegistryClient } from "./registry-client.ts";

/** SpooledLayer is a container's changes as an uncompressed layer tar, held until the push is done. */
export interface SpooledLayer {
  /** digest of the tar (`sha256:<hex>`), also its diffID: the layer is not compressed. */
  digest: string;
  size: number;
  /** open streams the tar from its start (once per upload). */
  open(): AsyncIterable<Uint8Array>;
  /** dispose drops the spooled tar. */
  dispose(): Promise<void>;
}

/**
 * LayerDiffer spools a containerd container's writable layer (`ctr snapshots diff`), or answers
 * `gone` with the runtime's words when the container's snapshot does not exist (the container
 * was removed, or replaced by a restart). Any other failure is thrown.
 */
export type LayerDiffer = (
  containerId: string,
  signal: AbortSignal,
) => Promise<SpooledLayer | { gone: string }>;

/** ContainerdCommitterDeps are the node's runtime and registry (no clock: an image is dated by its request). */
export interface ContainerdCommitterDeps {
  diff: LayerDiffer;
  registry: RegistryClient;
  /** platform picks the node's manifest when the base image is an index (default linux/amd64). */
  platform?: { os: string; architecture: string };
}

/** containerdCommitter is a Committer over containerd's snapshots and an OCI registry. */
export function containerdCommitter(deps: ContainerdCommitterDeps): Committer {
  const { registry } = deps;
  return {
    async commit(req: CommitRequest, signal: AbortSignal): Promise<CommitResult> {
      const target = parseImageReference(req.target);
      if (!target.tag || target.digest || !isSnapshotImage(req.target))
        throw new Error(`snapshot target ${req.target} must be a tag under agentbox-snapshots/`);
      const what = `container ${req.container.containerID} of pod ${req.namespace}/${req.source.pod}`;
      const id = containerIdOf(req.container.containerID, what);
      // The base first: a base the pause may not grow (layerLimitError) is refused before the
      // container's changes are spooled, and nothing is pushed.
      const base = parseImageReference(req.container.image);
      let manifest = await registry.getManifest(
        base.registry,
        base.repository,
        base.digest ?? base.tag ?? "latest",
        signal,
      );
      if (manifest.json.includes('"manifests"')) {
        const picked = pickPlatform(manifest.json, deps.platform ?? { os: "linux", architecture: "amd64" });
        manifest = await registry.getManifest(base.registry, base.repository, picked.digest, signal);
      }
      const baseManifest = parseManifest(manifest.json, req.container.image);
      const tooMany = layerLimitError(baseManifest.layers.length, req.container.image);
      if (tooMany) throw new Error(tooMany);
      const baseConfigJson = await registry.getBlobText(
        base.registry,
        base.repository,
        baseManifest.config.digest,
        signal,
      );
      const layer = await deps.diff(id, signal);
      if ("gone" in layer) throw new Error(`${what} is gone: ${layer.gone}`);
      try {
        const docs = snapshotDocuments({
          baseManifest,
          baseConfigJson,
          baseName: req.container.image,
          baseDigest: manifest.digest,
          layer: { digest: layer.digest, size: layer.size, diffID: layer.digest, mediaType: OCI_MEDIA.layer },
          created: req.created,
          tag: target.tag,
        });
        const repo = target.repository;
        await Promise.all(
          baseManifest.layers.map(async (l) => {
            if (base.registry === target.registry) {
              const mount = await registry.mountBlob(
                target.registry,
                repo,
                l.digest,
                base.repository,
                signal,
              );
              if (mount.mounted) return;
              // A registry may open an upload instead of mounting: copy the blob into that session.
              const body = await registry.openBlob(base.registry, base.repository, l.digest, signal);
              await registry.uploadBlob(
                target.registry,
                repo,
                l.digest,
                l.size,
                () => body,
                signal,
                mount.location,
              );
              return;
            }
            if (await registry.hasBlob(target.registry, repo, l.digest, signal)) return;
            const body = await registry.openBlob(base.registry, base.repository, l.digest, signal);
            await registry.uploadBlob(target.registry, repo, l.digest, l.size, () => body, signal);
          }),
        );
        if (!(await registry.hasBlob(target.registry, repo, layer.digest, signal)))
          await registry.uploadBlob(
            target.registry,
            repo,
            layer.digest,
            layer.size,
            () => layer.open(),
            signal,
          );
        const config = new TextEncoder().encode(docs.config.json);
        await registry.uploadBlob(
          target.registry,
          repo,
          docs.config.descriptor.digest,
          config.length,
          config,
          signal,
        );
        // What the tag names now: an earlier attempt at this generation, if any (a retry after
        // the agent died between its push and its status write). The same files make the same
        // manifest; other files make another, and the earlier one is left untagged for the caller.
        const before = await registry.manifestDigest(target.registry, repo, target.tag, signal);
        const pushed = await registry.putManifest(
          target.registry,
          repo,
          target.tag,
          docs.manifest.json,
          docs.manifest.mediaType,
          signal,
        );
        if (pushed && pushed !== docs.manifest.digest)
          throw new Error(
            `pushing to ${target.registry}: ${req.target} stored as ${pushed}, not the ${docs.manifest.digest} pushed`,
          );
        return {
          image: `${req.target}@${docs.manifest.digest}`,
          bytes: layer.size,
          ...(before && before !== docs.manifest.digest ? { replaced: `${req.target}@${before}` } : {}),
        };
      } finally {
        await layer.dispose();
      }
    },

    async remove(image: string, signal: AbortSignal): Promise<void> {
      if (!isSnapshotImage(image)) throw new Error(`refusing to delete ${image}: not a snapshot image`);
      const ref = parseImageReference(image);
      const digest =
        ref.digest ??
        (await registry.manifestDigest(ref.registry, ref.repository, ref.tag ?? "latest", signal));
      if (!digest) return;
      await registry.deleteManifest(ref.registry, ref.repository, digest, signal);
    },

    async removeRepository(name: string, signal: AbortSignal): Promise<void> {
      // Throws for anything but `<registry>/agentbox-snapshots/...`: nothing else is emptied.
      const repo = parseSnapshotRepository(name);
      const deleted = new Set<string>();
      for (const tag of await registry.listTags(repo.registry, repo.repository, signal)) {
        // A tag whose manifest an earlier delete took (two tags of one manifest) answers 404.
        const digest = await registry.manifestDigest(repo.registry, repo.repository, tag, signal);
        if (!digest || deleted.has(digest)) continue;
        await registry.deleteManifest(repo.registry, repo.repository, digest, signal);
        deleted.add(digest);
      }
    },
  };
}

/** containerIdOf is containerd's id of a container the kubelet reports as `containerd://<id>`. */
function containerIdOf(containerID: string, what: string): string {
  const m = /^(?:containerd:\/\/)?([0-9a-zA-Z][0-9a-zA-Z_.-]*)$/.exec(containerID);
  if (!m?.[1]) throw new Error(`${what} is not a containerd container`);
  return m[1];
}
