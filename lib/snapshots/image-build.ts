// The snapshot image's documents. A pause commits a container's writable layer on top of the
// image it runs: the new image is the base image's manifest and config with that one layer
// appended (rootfs.diff_ids, history, manifest layers), so a resume runs the same entrypoint,
// env and user on the same base layers (which the registry shares, never copies) plus the
// sandbox's own files. Pure: the caller reads the base documents and pushes the results.
import { sha256Hex } from "../util/sha256.ts";

/** OCI_MEDIA are the OCI image-spec media types a snapshot image is written with. */
export const OCI_MEDIA = {
  index: "application/vnd.oci.image.index.v1+json",
  manifest: "application/vnd.oci.image.manifest.v1+json",
  config: "application/vnd.oci.image.config.v1+json",
  layer: "application/vnd.oci.image.layer.v1.tar",
  layerGzip: "application/vnd.oci.image.layer.v1.tar+gzip",
  layerZstd: "application/vnd.oci.image.layer.v1.tar+zstd",
} as const;

/** DOCKER_MEDIA are Docker's v2 schema 2 media types a base image may come in. */
export const DOCKER_MEDIA = {
  manifestList: "application/vnd.docker.distribution.manifest.list.v2+json",
  manifest: "application/vnd.docker.distribution.manifest.v2+json",
  config: "application/vnd.docker.container.image.v1+json",
  layerGzip: "application/vnd.docker.image.rootfs.diff.tar.gzip",
  layer: "application/vnd.docker.image.rootfs.diff.tar",
} as const;

/** SNAPSHOT_CREATED_BY is the history entry's created_by of a committed layer. */
export const SNAPSHOT_CREATED_BY = "agentbox pause: the container's filesystem changes";

/** Descriptor points at a blob by media type, digest and size. */
export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
  platform?: { os?: string; architecture?: string; variant?: string };
}

/** ImageManifest is the part of a (OCI or Docker v2) image manifest a snapshot reads. */
export interface ImageManifest {
  schemaVersion?: number;
  mediaType?: string;
  config: Descriptor;
  layers: Descriptor[];
  annotations?: Record<string, string>;
}

/** NewLayer is the committed layer: its blob (digest, size, media type) and its uncompressed digest. */
export interface NewLayer {
  digest: string;
  size: number;
  diffID: string;
  mediaType?: string;
}

/** SnapshotDocuments are what a pause pushes besides the layer: the config and the manifest. */
export interface SnapshotDocuments {
  config: { json: string; descriptor: Descriptor };
  manifest: { json: string; digest: string; mediaType: string };
}

// The same bytes under Docker's name and OCI's: a layer's blob does not change with its type.
const TO_OCI: Record<string, string> = {
  [DOCKER_MEDIA.layerGzip]: OCI_MEDIA.layerGzip,
  [DOCKER_MEDIA.layer]: OCI_MEDIA.layer,
  [DOCKER_MEDIA.config]: OCI_MEDIA.config,
};

const digestOf = (json: string) => `sha256:${sha256Hex(json)}`;

/** parseManifest reads an image manifest's JSON; an index or anything without layers is a clear error. */
export function parseManifest(json: string, what: string): ImageManifest {
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch (e) {
    throw new Error(`manifest of ${what} is not JSON: ${String(e)}`);
  }
  const m = doc as Partial<ImageManifest> & { manifests?: unknown };
  if (m.manifests !== undefined) throw new Error(`manifest of ${what} is an index, not an image manifest`);
  if (!m.config || typeof m.config.digest !== "string" || !Array.isArray(m.layers))
    throw new Error(`manifest of ${what} has no config or layers (mediaType ${String(m.mediaType)})`);
  return m as ImageManifest;
}

/**
 * pickPlatform chooses from an image index's JSON the manifest of the given platform (what the
 * node runs: os and architecture as OCI spells them), or throws naming what the index holds.
 */
export function pickPlatform(indexJson: string, platform: { os: string; architecture: string }): Descriptor {
  const index = JSON.parse(indexJson) as { manifests?: Descriptor[] };
  const found = (index.manifests ?? []).find(
    (d) => d.platform?.os === platform.os && d.platform?.architecture === platform.architecture,
  );
  if (found) return found;
  const held = (index.manifests ?? []).map((d) => `${d.platform?.os}/${d.platform?.architecture}`);
  throw new Error(
    `the image index has no ${platform.os}/${platform.architecture} manifest (it has ${held.join(", ") || "none"})`,
  );
}

/**
 * MAX_IMAGE_LAYERS is the most layers a snapshot image may have. A pause adds one layer to the
 * image its sandbox runs, so a sandbox paused and resumed over and over grows its image by one
 * layer each time, and a container's root filesystem is one overlay mount of all of them (each
 * layer a lower directory). The kernel bounds that mount: its options must fit in one page (4096
 * bytes), which is why Docker's overlay2 driver takes at most 128 lower layers and Docker's layer
 * store at most 125 (moby layer/layer_store.go, maxLayerDepth: "the 127 max in some graphdrivers
 * plus the 2 additional layers used to create a rwlayer"), and overlayfs itself at most 500
 * (OVL_MAX_STACK). containerd's overlay snapshotter has no cap of its own: an image past what the
 * mount takes is pushed without complaint and fails only when a resume starts it. 125 is the cap
 * images are conventionally built to, so a snapshot within it mounts wherever its base did.
 */
export const MAX_IMAGE_LAYERS = 125;

/**
 * layerLimitError says why a pause of a container whose image (`image`) has `baseLayers` layers
 * must not be committed: its snapshot, one layer more, would exceed MAX_IMAGE_LAYERS and could
 * not be resumed. Undefined when it may. Both committers ask before they push anything.
 */
export function layerLimitError(baseLayers: number, image: string): string | undefined {
  if (baseLayers + 1 <= MAX_IMAGE_LAYERS) return undefined;
  return (
    `the sandbox's image has ${baseLayers} layers; a pause adds one and ${baseLayers + 1} exceeds the ` +
    `limit of ${MAX_IMAGE_LAYERS}: a container runtime could not mount the snapshot to resume it ` +
    `(image ${image})`
  );
}

/**
 * SNAPSHOT_TAG_ANNOTATION names, in a snapshot manifest's annotations, the tag it was pushed as
 * (`g<generation>`): two pauses of a sandbox never share a manifest, so deleting an earlier
 * pause's image by digest never takes a later one's, even when their files are the same.
 */
export const SNAPSHOT_TAG_ANNOTATION = "agentbox.navix.sh/snapshot-tag";

/**
 * snapshotDocuments composes the snapshot image: the base config with the new layer's diffID
 * appended to rootfs.diff_ids, a history entry for it (created_by SNAPSHOT_CREATED_BY; base
 * layers the base history does not cover get an entry saying so first, so history's non-empty
 * entries stay one per layer); and an OCI manifest over the base layers (Docker layer types
 * renamed to their OCI equals, same bytes) plus the new layer, with the base manifest's digest
 * and name and the tag as annotations. No clock is read: `created` (the config's, the history
 * entry's and the manifest's creation time) comes from the caller, who takes it from the
 * snapshot object, so a commit retried for the same generation over the same layer pushes the
 * same bytes and digests as the first attempt, and never orphans the first manifest. A base at
 * MAX_IMAGE_LAYERS already is refused (layerLimitError), before the caller pushes anything.
 */
export function snapshotDocuments(input: {
  baseManifest: ImageManifest;
  baseConfigJson: string;
  baseName: string;
  baseDigest: string;
  layer: NewLayer;
  /** created is when the image was made (RFC 3339), a time the snapshot object carries. */
  created: string;
  /** tag is the tag the image is pushed as (`g<generation>`). */
  tag: string;
}): SnapshotDocuments {
  const { baseManifest, layer } = input;
  const tooMany = layerLimitError(baseManifest.layers.length, input.baseName);
  if (tooMany) throw new Error(tooMany);
  const when = Date.parse(input.created);
  if (Number.isNaN(when))
    throw new Error(`snapshot creation time ${JSON.stringify(input.created)} is not a time`);
  const created = new Date(when).toISOString().replace(/\.\d{3}Z$/, "Z");
  let config: Record<string, unknown>;
  try {
    config = JSON.parse(input.baseConfigJson) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`config of ${input.baseName} is not JSON: ${String(e)}`);
  }
  const rootfs = (config.rootfs ?? {}) as { type?: string; diff_ids?: unknown };
  const diffIds = Array.isArray(rootfs.diff_ids) ? (rootfs.diff_ids as string[]) : [];
  if (diffIds.length !== baseManifest.layers.length)
    throw new Error(
      `${input.baseName}: its config lists ${diffIds.length} layers and its manifest ${baseManifest.layers.length}`,
    );
  const history = Array.isArray(config.history) ? (config.history as { empty_layer?: boolean }[]) : [];
  const covered = history.filter((h) => h.empty_layer !== true).length;
  const padding = Array.from({ length: Math.max(0, diffIds.length - covered) }, () => ({
    comment: "base image layer (the base image recorded no history for it)",
  }));
  const newConfig = {
    ...config,
    created,
    rootfs: { type: "layers", diff_ids: [...diffIds, layer.diffID] },
    history: [...history, ...padding, { created, created_by: SNAPSHOT_CREATED_BY }],
  };
  const configJson = JSON.stringify(newConfig);
  const configDescriptor: Descriptor = {
    mediaType: OCI_MEDIA.config,
    digest: digestOf(configJson),
    size: new TextEncoder().encode(configJson).length,
  };
  const manifest = {
    schemaVersion: 2,
    mediaType: OCI_MEDIA.manifest,
    config: configDescriptor,
    layers: [
      ...baseManifest.layers.map((l) => ({
        mediaType: TO_OCI[l.mediaType] ?? l.mediaType,
        digest: l.digest,
        size: l.size,
        ...(l.annotations ? { annotations: l.annotations } : {}),
      })),
      { mediaType: layer.mediaType ?? OCI_MEDIA.layer, digest: layer.digest, size: layer.size },
    ],
    annotations: {
      "org.opencontainers.image.base.digest": input.baseDigest,
      "org.opencontainers.image.base.name": input.baseName,
      "org.opencontainers.image.created": created,
      [SNAPSHOT_TAG_ANNOTATION]: input.tag,
    },
  };
  const manifestJson = JSON.stringify(manifest);
  return {
    config: { json: configJson, descriptor: configDescriptor },
    manifest: { json: manifestJson, digest: digestOf(manifestJson), mediaType: OCI_MEDIA.manifest },
  };
}
