import type { V1ContainerStatus, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { InplaceUpdateState } from "../../lib/crd/annotations.ts";
import {
  hasUnexpectedRestart,
  isUpdateComplete,
  stableContainerStatuses,
  targetImagesOf,
} from "../../lib/lifecycle/completion.ts";
import { referenceDigestResolver, resolveDigests } from "../../lib/lifecycle/digest-resolver.ts";
import {
  normalizeImage,
  referenceDigest,
  restartReference,
  sameImage,
} from "../../lib/lifecycle/image-reference.ts";

const D1 = `sha256:${"1".repeat(64)}`;
const D2 = `sha256:${"2".repeat(64)}`;
const NO_DIGESTS: ReadonlyMap<string, string> = new Map();

type Status = Partial<V1ContainerStatus> & { name: string };
const running = (
  name: string,
  image: string,
  imageID: string,
  containerID: string,
  restartCount = 0,
): Status => ({
  name,
  image,
  imageID,
  containerID,
  restartCount,
  ready: true,
  state: { running: { startedAt: new Date("2026-05-10T12:00:00Z") } },
});

function pod(spec: Record<string, string>, statuses: Status[]): V1Pod {
  return {
    metadata: { name: "p" },
    spec: { containers: Object.entries(spec).map(([name, image]) => ({ name, image })) },
    status: { phase: "Running", containerStatuses: statuses as V1ContainerStatus[] },
  };
}

const starting = (over: Partial<InplaceUpdateState> = {}): InplaceUpdateState => ({
  phase: "starting",
  targetImages: { main: "registry.example/app:2" },
  targetPodPhase: "running",
  updateTimestamp: "2026-05-10T12:00:00Z",
  lastContainerStatuses: {
    main: { imageID: `registry.example/idle@${D1}`, containerID: "containerd://old" },
  },
  ...over,
});

describe("isUpdateComplete", () => {
  const target = "registry.example/app:2";
  const newStatus = running("main", target, `registry.example/app@${D2}`, "containerd://new");
  it.each<[string, V1Pod, InplaceUpdateState, ReadonlyMap<string, string>, boolean]>([
    [
      "new container with the target digest",
      pod({ main: target }, [newStatus]),
      starting(),
      new Map([[target, D2]]),
      true,
    ],
    [
      "digest known but different",
      pod({ main: target }, [newStatus]),
      starting(),
      new Map([[target, D1]]),
      false,
    ],
    ["digest unknown: image name equal", pod({ main: target }, [newStatus]), starting(), NO_DIGESTS, true],
    [
      "digest unknown: name equal after normalising docker.io/library and :latest",
      pod({ main: "nginx" }, [
        running("main", "docker.io/library/nginx:latest", "x@sha256:3", "containerd://new"),
      ]),
      starting({ targetImages: { main: "nginx" } }),
      NO_DIGESTS,
      true,
    ],
    [
      "digest unknown: another image still runs",
      pod({ main: target }, [
        running("main", "registry.example/idle:1", `registry.example/idle@${D1}`, "containerd://old"),
      ]),
      starting(),
      NO_DIGESTS,
      false,
    ],
    [
      "spec image not (yet) the target",
      pod({ main: "registry.example/idle:1" }, [newStatus]),
      starting(),
      NO_DIGESTS,
      false,
    ],
    ["no status for the target container", pod({ main: target }, []), starting(), NO_DIGESTS, false],
    [
      "container waiting (pull error)",
      pod({ main: target }, [{ ...newStatus, state: { waiting: { reason: "ImagePullBackOff" } } }]),
      starting(),
      NO_DIGESTS,
      false,
    ],
    [
      "status already shows the target but the old container ids: not replaced yet",
      pod({ main: target }, [running("main", target, `registry.example/idle@${D1}`, "containerd://old")]),
      starting(),
      NO_DIGESTS,
      false,
    ],
    [
      "rollback to the same digest: not complete while the containerID is unchanged",
      pod({ main: target }, [running("main", target, `registry.example/app@${D1}`, "containerd://old")]),
      starting({
        lastContainerStatuses: {
          main: { imageID: `registry.example/app@${D1}`, containerID: "containerd://old" },
        },
      }),
      new Map([[target, D1]]),
      false,
    ],
    [
      "rollback to the same digest: complete once the containerID changed",
      pod({ main: target }, [running("main", target, `registry.example/app@${D1}`, "containerd://new")]),
      starting({
        lastContainerStatuses: {
          main: { imageID: `registry.example/app@${D1}`, containerID: "containerd://old" },
        },
      }),
      new Map([[target, D1]]),
      true,
    ],
    [
      "container had no ids when the update began (was waiting): a running new image completes",
      pod({ main: target }, [newStatus]),
      starting({ lastContainerStatuses: { main: {} } }),
      NO_DIGESTS,
      true,
    ],
    [
      "no snapshot for the container (older writer)",
      pod({ main: target }, [newStatus]),
      starting({ lastContainerStatuses: undefined }),
      NO_DIGESTS,
      true,
    ],
    [
      "every target container must be done",
      pod({ main: target, tool: "tool:2" }, [
        newStatus,
        running("tool", "tool:1", "tool@sha256:1", "containerd://t1"),
      ]),
      starting({ targetImages: { main: target, tool: "tool:2" } }),
      NO_DIGESTS,
      false,
    ],
    [
      "containers the update does not target are ignored",
      pod({ main: target, sidecar: "proxy:1" }, [
        newStatus,
        { ...running("sidecar", "proxy:1", "p", "c"), state: { waiting: {} } },
      ]),
      starting(),
      NO_DIGESTS,
      true,
    ],
    [
      "legacy targetImage applies to the first container",
      pod({ main: target }, [newStatus]),
      starting({ targetImages: undefined, targetImage: target }),
      NO_DIGESTS,
      true,
    ],
    [
      "a completed state is complete",
      pod({ main: "x" }, []),
      starting({ phase: "completed" }),
      NO_DIGESTS,
      true,
    ],
    [
      "no targets: nothing to wait for",
      pod({ main: "x" }, []),
      starting({ targetImages: {} }),
      NO_DIGESTS,
      true,
    ],
  ])("%s → %s", (_name, p, state, digests, expected) => {
    expect(isUpdateComplete(p, state, digests)).toBe(expected);
  });
});

describe("hasUnexpectedRestart", () => {
  const completed = (
    stable: InplaceUpdateState["stableContainerStatuses"],
    over: Partial<InplaceUpdateState> = {},
  ) =>
    ({
      phase: "completed",
      targetPodPhase: "running",
      stableContainerStatuses: stable,
      ...over,
    }) as InplaceUpdateState;
  const main = (containerID: string, restartCount = 0) =>
    running("main", "app:2", "app@sha256:2", containerID, restartCount);

  it.each<[string, Status[], InplaceUpdateState, boolean]>([
    [
      "same containerID",
      [main("containerd://a")],
      completed({ main: { containerID: "containerd://a", restartCount: 0 } }),
      false,
    ],
    [
      "containerID changed (OOM kill)",
      [main("containerd://b", 1)],
      completed({ main: { containerID: "containerd://a", restartCount: 0 } }),
      true,
    ],
    [
      "containerID changed, restartCount not yet (separate kubelet patches)",
      [main("containerd://b", 0)],
      completed({ main: { containerID: "containerd://a", restartCount: 0 } }),
      true,
    ],
    [
      "restartCount changed alone: never a restart",
      [main("containerd://a", 5)],
      completed({ main: { containerID: "containerd://a", restartCount: 0 } }),
      false,
    ],
    [
      "empty stable containerID: skipped",
      [main("containerd://b", 3)],
      completed({ main: { containerID: "", restartCount: 0 } }),
      false,
    ],
    [
      "stable containerID absent: skipped",
      [main("containerd://b", 3)],
      completed({ main: { restartCount: 0 } }),
      false,
    ],
    [
      "container outside the snapshot (sidecar): skipped",
      [main("containerd://a"), running("proxy", "p:1", "p", "containerd://p2", 4)],
      completed({ main: { containerID: "containerd://a", restartCount: 0 } }),
      false,
    ],
    ["no snapshot at all", [main("containerd://b")], completed(undefined), false],
    [
      "update still starting: containerIDs change by design",
      [main("containerd://b")],
      completed({ main: { containerID: "containerd://a", restartCount: 0 } }, { phase: "starting" }),
      false,
    ],
    [
      "completed towards idle: not a running sandbox",
      [main("containerd://b")],
      completed({ main: { containerID: "containerd://a", restartCount: 0 } }, { targetPodPhase: "idle" }),
      false,
    ],
  ])("%s → %s", (_name, statuses, state, expected) => {
    expect(hasUnexpectedRestart(pod({ main: "app:2" }, statuses), state)).toBe(expected);
  });
});

describe("stableContainerStatuses", () => {
  const p = pod({ main: "app:2", proxy: "p:1" }, [
    running("main", "app:2", "a", "containerd://m", 1),
    running("proxy", "p:1", "p", "containerd://p", 0),
    { name: "late", restartCount: 0 },
  ]);
  it("snapshots every container, leaving out empty containerIDs", () => {
    expect(stableContainerStatuses(p)).toEqual({
      main: { containerID: "containerd://m", restartCount: 1 },
      proxy: { containerID: "containerd://p", restartCount: 0 },
      late: { restartCount: 0 },
    });
  });
  it("only the targeted containers when targets are given", () => {
    expect(stableContainerStatuses(p, { main: "app:2" })).toEqual({
      main: { containerID: "containerd://m", restartCount: 1 },
    });
  });
});

describe("targetImagesOf", () => {
  it("prefers targetImages, else the legacy targetImage on the first container", () => {
    const p = pod({ main: "a", b: "b" }, []);
    expect(targetImagesOf(p, { phase: "starting", targetImages: { b: "b:2" }, targetImage: "x" })).toEqual({
      b: "b:2",
    });
    expect(targetImagesOf(p, { phase: "starting", targetImage: "x" })).toEqual({ main: "x" });
    expect(targetImagesOf(p, { phase: "starting" })).toEqual({});
  });
});

describe("image references", () => {
  it.each([
    ["nginx", "docker.io/library/nginx:latest"],
    ["nginx:1.27", "docker.io/library/nginx:1.27"],
    ["library/nginx", "docker.io/library/nginx:latest"],
    ["docker.io/nginx", "docker.io/library/nginx:latest"],
    ["index.docker.io/library/nginx:1", "docker.io/library/nginx:1"],
    ["docker.io/library/nginx:latest", "docker.io/library/nginx:latest"],
    ["user/app", "docker.io/user/app:latest"],
    ["ghcr.io/org/app", "ghcr.io/org/app:latest"],
    ["localhost/app", "localhost/app:latest"],
    ["localhost:5000/app:1", "localhost:5000/app:1"],
    [`nginx@${D1}`, `docker.io/library/nginx@${D1}`],
    [`nginx:1@${D1}`, `docker.io/library/nginx:1@${D1}`],
    ["registry:5000/team/app", "registry:5000/team/app:latest"],
  ])("normalizeImage(%s) = %s", (image, normal) => {
    expect(normalizeImage(image)).toBe(normal);
  });

  it.each([
    [`repo@${D1}`, D1],
    [`registry.example/team/app:1@${D2}`, D2],
    ["repo:1", undefined],
    ["repo@sha256:short", undefined],
  ])("referenceDigest(%s) = %s", (image, digest) => {
    expect(referenceDigest(image)).toBe(digest);
  });

  it.each([
    ["nginx:1", "docker.io/library/nginx:1", true],
    [`nginx:1@${D1}`, "nginx:1", true],
    [`nginx:latest@${D1}`, "nginx", true],
    [`nginx:1@${D1}`, `nginx:1@${D2}`, false],
    [`nginx@${D1}`, "nginx", false],
    ["nginx:1", `nginx:1@${D1}`, false],
    ["nginx:1", "nginx:2", false],
  ])("sameImage(%s, %s) = %s", (running, wanted, same) => {
    expect(sameImage(running, wanted)).toBe(same);
  });

  it.each([
    ["nginx:1", `docker.io/library/nginx@${D1}`, `nginx:1@${D1}`],
    ["ghcr.io/org/app", `ghcr.io/org/app@${D2}`, `ghcr.io/org/app:latest@${D2}`],
    [`nginx:1@${D1}`, `docker.io/library/nginx@${D1}`, undefined],
    ["nginx:1", `sha256:${"a".repeat(64)}`, undefined],
    ["nginx:1", undefined, undefined],
    ["", `x@${D1}`, undefined],
  ])("restartReference(%s, %s) = %s", (image, imageID, reference) => {
    expect(restartReference(image, imageID)).toBe(reference);
  });

  it("referenceDigestResolver and resolveDigests: pinned digests only, failures left out", async () => {
    expect(await referenceDigestResolver.resolve(`a@${D1}`)).toBe(D1);
    expect(await referenceDigestResolver.resolve("a:1")).toBeUndefined();
    const flaky = {
      resolve: async (image: string) => {
        if (image === "boom") throw new Error("registry down");
        return image === "tag:1" ? D2 : referenceDigestResolver.resolve(image);
      },
    };
    const digests = await resolveDigests(flaky, [`a@${D1}`, "tag:1", "boom", "plain:1", "tag:1"]);
    expect([...digests]).toEqual([
      [`a@${D1}`, D1],
      ["tag:1", D2],
    ]);
  });
});
