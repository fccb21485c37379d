/**
 * oci-layout.ts makes the JSON documents of an OCI image layout (image-spec v1.1): each image's
 * config and manifest, the layout's index naming every image by `org.opencontainers.image.ref.name`
 * (what `skopeo copy oci:<dir>:<name>` looks up), and the `oci-layout` marker. Every document is
 * serialised from literals in a fixed key order with no timestamps of the build, so equal inputs
 * give equal digests.
 */
import { createHash } from "node:crypto";

export const MEDIA = {
  index: "application/vnd.oci.image.index.v1+json",
  manifest: "application/vnd.oci.image.manifest.v1+json",
  config: "application/vnd.oci.image.config.v1+json",
  layer: "application/vnd.oci.image.layer.v1.tar",
  layerGzip: "application/vnd.oci.image.layer.v1.tar+gzip",
} as const;

/** REF_NAME is the annotation an index entry's name goes in. */
export const REF_NAME = "org.opencontainers.image.ref.name";

/** Descriptor points at a blob: its media type, digest (`sha256:<hex>`) and size. */
export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

/** Blob is a document as stored: its bytes and descriptor. */
export interface Blob {
  bytes: Buffer;
  descriptor: Descriptor;
}

/** RunSpec is what an image's config runs and how. */
export interface RunSpec {
  /** user: `uid:gid`. */
  user: string;
  env: string[];
  entrypoint: string[];
  cmd?: string[];
  workingDir: string;
  exposedPorts?: number[];
  labels?: Record<string, string>;
}

/** sha256 is the digest of bytes, as OCI writes it. */
export function sha256(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/** jsonBlob serialises a document and describes it. */
export function jsonBlob(mediaType: string, value: unknown): Blob {
  const bytes = Buffer.from(JSON.stringify(value));
  return { bytes, descriptor: { mediaType, digest: sha256(bytes), size: bytes.length } };
}

/** imageConfig is an image's config (linux/amd64) over layers of the given uncompressed digests. */
export function imageConfig(run: RunSpec, diffIds: readonly string[]): Blob {
  return jsonBlob(MEDIA.config, {
    created: "2000-01-01T00:00:00Z",
    architecture: "amd64",
    os: "linux",
    config: {
      User: run.user,
      Env: run.env,
      Entrypoint: run.entrypoint,
      ...(run.cmd ? { Cmd: run.cmd } : {}),
      WorkingDir: run.workingDir,
      ...(run.exposedPorts?.length
        ? { ExposedPorts: Object.fromEntries(run.exposedPorts.map((p) => [`${p}/tcp`, {}])) }
        : {}),
      ...(run.labels ? { Labels: run.labels } : {}),
      StopSignal: "SIGTERM",
    },
    rootfs: { type: "layers", diff_ids: diffIds },
  });
}

/** imageManifest is the manifest of one image: its config and layers, bottom first. */
export function imageManifest(config: Descriptor, layers: readonly Descriptor[]): Blob {
  return jsonBlob(MEDIA.manifest, {
    schemaVersion: 2,
    mediaType: MEDIA.manifest,
    config,
    layers,
  });
}

/** layoutIndex is the layout's index.json: each manifest under its reference name. */
export function layoutIndex(images: readonly { refName: string; manifest: Descriptor }[]): Blob {
  return jsonBlob(MEDIA.index, {
    schemaVersion: 2,
    mediaType: MEDIA.index,
    manifests: images.map((i) => ({
      mediaType: i.manifest.mediaType,
      digest: i.manifest.digest,
      size: i.manifest.size,
      annotations: { [REF_NAME]: i.refName },
      platform: { architecture: "amd64", os: "linux" },
    })),
  });
}

/** OCI_LAYOUT is the content of the layout's `oci-layout` file. */
export const OCI_LAYOUT = `${JSON.stringify({ imageLayoutVersion: "1.0.0" })}`;
