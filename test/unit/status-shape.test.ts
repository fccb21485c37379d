import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { repositoryOf, shapeDifferences, statusShape } from "../support/status-shape.ts";

const hex = (c: string) => c.repeat(64);
const image = "registry.agentbox.test/agentbox/idle:1";
const pod = (specImage: string, status: V1Pod["status"]): V1Pod => ({
  metadata: { name: "p", namespace: "ns", uid: "u-1" },
  spec: { containers: [{ name: "main", image: specImage }] },
  status,
});
const running = (id: string, digest: string, restartCount = 0) =>
  pod(image, {
    phase: "Running",
    containerStatuses: [
      {
        name: "main",
        image,
        imageID: `registry.agentbox.test/agentbox/idle@sha256:${hex(digest)}`,
        containerID: `containerd://${hex(id)}`,
        ready: true,
        restartCount,
        state: { running: { startedAt: new Date("2026-12-01T00:00:00Z") } },
      },
    ],
  });

describe("statusShape", () => {
  it("maps values to forms: ids against the status before, times, restart deltas", () => {
    const before = running("a", "d");
    const after = running("b", "d", 1);
    const shape = statusShape(after, before);
    expect(shape["containers.main.containerID"]).toBe("containerd://<64 hex> (new)");
    expect(shape["containers.main.imageID"]).toBe("<spec repo>@sha256:<64 hex> (=before)");
    expect(shape["containers.main.image"]).toBe("=spec");
    expect(shape["containers.main.restartCount"]).toBe("before+1");
    expect(shape["containers.main.state.running.startedAt"]).toBe("<time>");
    expect(shape.phase).toBe('"Running"');
  });

  it("names a pinned spec's tag, other images, and placeholders in messages", () => {
    const pinned = `${image}@sha256:${hex("d")}`;
    const p = running("a", "d");
    p.spec!.containers[0]!.image = pinned;
    expect(statusShape(p)["containers.main.image"]).toBe("=spec's tag (pin dropped)");
    const failing = pod("registry.agentbox.test/agentbox/missing:2", {
      containerStatuses: [
        {
          name: "main",
          image,
          imageID: "",
          ready: false,
          restartCount: 0,
          state: {
            waiting: {
              reason: "ErrImagePull",
              message: 'pull "registry.agentbox.test/agentbox/missing:2" for p',
            },
          },
        },
      ],
    });
    const shape = statusShape(failing, running("a", "d"));
    expect(shape["containers.main.image"]).toBe("=before");
    expect(shape["containers.main.imageID"]).toBe('""');
    expect(shape["containers.main.state.waiting.message"]).toBe('pull "<spec main>" for <pod>');
  });

  it("lists differing paths, leaving out the ignored ones", () => {
    expect(shapeDifferences({ a: "1", b: "2", "x.user": "3" }, { a: "1", b: "4" }, [/user/])).toEqual([
      "b: 2 → 4",
    ]);
    expect(shapeDifferences({ a: "1" }, {})).toEqual(["a: 1 → absent"]);
  });

  it("takes a reference's repository without tag or digest", () => {
    expect(repositoryOf(`${image}@sha256:${hex("d")}`)).toBe("registry.agentbox.test/agentbox/idle");
    expect(repositoryOf("localhost:5000/a/b:1")).toBe("localhost:5000/a/b");
  });
});
