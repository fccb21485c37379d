import { createHash } from "node:crypto";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  DOCKER_MEDIA,
  layerLimitError,
  MAX_IMAGE_LAYERS,
  OCI_MEDIA,
  parseManifest,
  pickPlatform,
  SNAPSHOT_CREATED_BY,
  SNAPSHOT_TAG_ANNOTATION,
  snapshotDocuments,
} from "../../lib/snapshots/image-build.ts";

// The snapshot image's documents: the base image with one layer more, written so that a resume
// runs the same entrypoint, env and user, and equal inputs give equal digests.

const d = (c: string) => `sha256:${c.repeat(64)}`;
const sha = (s: string) => `sha256:${createHash("sha256").update(s).digest("hex")}`;
/** CREATED is the snapshot object's creationTimestamp, as the agent passes it. */
const CREATED = "2026-12-02T10:00:00Z";
const LAYER = { digest: d("9"), size: 1536, diffID: d("9") };

const baseManifest = {
  schemaVersion: 2,
  mediaType: OCI_MEDIA.manifest,
  config: { mediaType: OCI_MEDIA.config, digest: d("c"), size: 300 },
  layers: [
    { mediaType: OCI_MEDIA.layer, digest: d("1"), size: 10 },
    { mediaType: OCI_MEDIA.layerGzip, digest: d("2"), size: 20 },
  ],
};
const baseConfig = {
  created: "2000-01-01T00:00:00Z",
  architecture: "amd64",
  os: "linux",
  config: { User: "1000:1000", Env: ["A=1"], Entrypoint: ["/sbin/agentbox-init"], WorkingDir: "/home/user" },
  rootfs: { type: "layers", diff_ids: [d("a"), d("b")] },
};

const build = (over: Partial<Parameters<typeof snapshotDocuments>[0]> = {}) =>
  snapshotDocuments({
    baseManifest,
    baseConfigJson: JSON.stringify(baseConfig),
    baseName: `registry.agentbox.test/agentbox/sandbox-a@${d("f")}`,
    baseDigest: d("f"),
    layer: LAYER,
    created: CREATED,
    tag: "g1",
    ...over,
  });

describe("snapshotDocuments", () => {
  it("appends the layer to the base config and manifest, keeping how the image runs", () => {
    const docs = build();
    const config = JSON.parse(docs.config.json);
    expect(config.config).toEqual(baseConfig.config);
    expect(config.created).toBe("2026-12-02T10:00:00Z");
    expect(config.rootfs).toEqual({ type: "layers", diff_ids: [d("a"), d("b"), d("9")] });
    const manifest = JSON.parse(docs.manifest.json);
    expect(manifest.mediaType).toBe(OCI_MEDIA.manifest);
    expect(manifest.config).toEqual(docs.config.descriptor);
    expect(manifest.layers).toEqual([
      ...baseManifest.layers,
      { mediaType: OCI_MEDIA.layer, digest: d("9"), size: 1536 },
    ]);
    expect(manifest.annotations["org.opencontainers.image.base.digest"]).toBe(d("f"));
  });

  it("describes its documents by their exact bytes", () => {
    const docs = build();
    expect(docs.config.descriptor).toEqual({
      mediaType: OCI_MEDIA.config,
      digest: sha(docs.config.json),
      size: Buffer.byteLength(docs.config.json),
    });
    expect(docs.manifest.digest).toBe(sha(docs.manifest.json));
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it("gives the same bytes and digests for the same input, whatever the clock says (a retried commit)", () => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date("2026-12-02T10:00:05Z"));
    const first = build();
    vi.setSystemTime(new Date("2031-01-01T00:00:00Z"));
    const retried = build();
    expect(retried).toEqual(first);
    expect(retried.manifest.digest).toBe(first.manifest.digest);
    expect(retried.config.descriptor.digest).toBe(first.config.descriptor.digest);
    expect(JSON.parse(first.config.json).created).toBe(CREATED);
  });

  it("sets apart another time, another tag (generation) and another layer", () => {
    const digest = build().manifest.digest;
    expect(build({ created: "2026-12-03T00:00:00Z" }).manifest.digest).not.toBe(digest);
    expect(build({ tag: "g2" }).manifest.digest).not.toBe(digest);
    expect(JSON.parse(build({ tag: "g2" }).manifest.json).annotations[SNAPSHOT_TAG_ANNOTATION]).toBe("g2");
    expect(build({ layer: { ...LAYER, digest: d("8"), diffID: d("8") } }).manifest.digest).not.toBe(digest);
    // The same instant written another way is the same image.
    expect(build({ created: "2026-12-02T10:00:00.000Z" }).manifest.digest).toBe(digest);
    expect(() => build({ created: "yesterday" })).toThrow(/"yesterday" is not a time/);
  });

  it("records the pause in history, covering base layers the base history did not", () => {
    const none = JSON.parse(build().config.json).history;
    expect(none).toHaveLength(3);
    expect(none[2]).toEqual({ created: "2026-12-02T10:00:00Z", created_by: SNAPSHOT_CREATED_BY });
    expect(SNAPSHOT_CREATED_BY).toMatch(/agentbox pause/);
    const history = [
      { created_by: "ADD base" },
      { created_by: "ENV A=1", empty_layer: true },
      { created_by: "ADD runtime" },
    ];
    const full = JSON.parse(
      build({ baseConfigJson: JSON.stringify({ ...baseConfig, history }) }).config.json,
    );
    expect(full.history).toEqual([
      ...history,
      { created: "2026-12-02T10:00:00Z", created_by: SNAPSHOT_CREATED_BY },
    ]);
  });

  it("writes a Docker v2 base's layers under their OCI names (the same bytes)", () => {
    const docker = {
      schemaVersion: 2,
      mediaType: DOCKER_MEDIA.manifest,
      config: { mediaType: DOCKER_MEDIA.config, digest: d("c"), size: 300 },
      layers: [
        { mediaType: DOCKER_MEDIA.layerGzip, digest: d("1"), size: 10 },
        { mediaType: DOCKER_MEDIA.layer, digest: d("2"), size: 20 },
      ],
    };
    const manifest = JSON.parse(build({ baseManifest: docker }).manifest.json);
    expect(manifest.layers.map((l: { mediaType: string }) => l.mediaType)).toEqual([
      OCI_MEDIA.layerGzip,
      OCI_MEDIA.layer,
      OCI_MEDIA.layer,
    ]);
    expect(manifest.config.mediaType).toBe(OCI_MEDIA.config);
  });

  it("refuses a base whose config and manifest disagree, or a config that is not JSON", () => {
    const one = { ...baseConfig, rootfs: { type: "layers", diff_ids: [d("a")] } };
    expect(() => build({ baseConfigJson: JSON.stringify(one) })).toThrow(
      /config lists 1 layers and its manifest 2/,
    );
    expect(() => build({ baseConfigJson: "{" })).toThrow(/is not JSON/);
  });
});

describe("the layer limit (layerLimitError, MAX_IMAGE_LAYERS)", () => {
  /** deep is a base of `n` layers, each its own diff id, as a registry would hold it. */
  const deep = (n: number) => {
    const digests = Array.from({ length: n }, (_, i) => sha(`layer ${i}`));
    return {
      baseManifest: {
        ...baseManifest,
        layers: digests.map((digest) => ({ mediaType: OCI_MEDIA.layer, digest, size: 10 })),
      },
      baseConfigJson: JSON.stringify({ ...baseConfig, rootfs: { type: "layers", diff_ids: digests } }),
    };
  };

  it("lets a pause grow an image up to the limit, and refuses the one layer past it", () => {
    expect(MAX_IMAGE_LAYERS).toBe(125);
    expect(layerLimitError(0, "img:1")).toBeUndefined();
    expect(layerLimitError(124, "img:1")).toBeUndefined();
    expect(layerLimitError(125, "registry.local/sandbox/base:1")).toBe(
      "the sandbox's image has 125 layers; a pause adds one and 126 exceeds the limit of 125: " +
        "a container runtime could not mount the snapshot to resume it (image registry.local/sandbox/base:1)",
    );
    expect(layerLimitError(300, "img:1")).toMatch(/^the sandbox's image has 300 layers; .* 301 exceeds/);
  });

  it("builds a snapshot of 125 layers over a base of 124, and refuses a base of 125", () => {
    const docs = build(deep(124));
    expect(JSON.parse(docs.manifest.json).layers).toHaveLength(125);
    expect(JSON.parse(docs.config.json).rootfs.diff_ids).toHaveLength(125);
    expect(() => build(deep(125))).toThrow(
      "the sandbox's image has 125 layers; a pause adds one and 126 exceeds the limit of 125",
    );
  });
});

describe("parseManifest and pickPlatform", () => {
  it("reads an image manifest and refuses an index or a document without layers", () => {
    expect(parseManifest(JSON.stringify(baseManifest), "x").layers).toHaveLength(2);
    expect(() => parseManifest(JSON.stringify({ manifests: [] }), "x")).toThrow(/is an index/);
    expect(() => parseManifest(JSON.stringify({ schemaVersion: 1 }), "x")).toThrow(/no config or layers/);
    expect(() => parseManifest("nope", "x")).toThrow(/not JSON/);
  });

  it("picks the node's platform from an index, or says what it holds", () => {
    const index = JSON.stringify({
      manifests: [
        {
          mediaType: OCI_MEDIA.manifest,
          digest: d("3"),
          size: 1,
          platform: { os: "linux", architecture: "arm64" },
        },
        {
          mediaType: OCI_MEDIA.manifest,
          digest: d("4"),
          size: 1,
          platform: { os: "linux", architecture: "amd64" },
        },
      ],
    });
    expect(pickPlatform(index, { os: "linux", architecture: "amd64" }).digest).toBe(d("4"));
    expect(() => pickPlatform(index, { os: "linux", architecture: "s390x" })).toThrow(
      /no linux\/s390x manifest \(it has linux\/arm64, linux\/amd64\)/,
    );
  });
});
