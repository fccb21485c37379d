import { describe, expect, it } from "vitest";
import {
  formatImageReference,
  isSnapshotImage,
  parseImageReference,
  parseSnapshotRepository,
  SNAPSHOT_REPOSITORY,
  snapshotRepository,
  snapshotTarget,
  staleKey,
} from "../../lib/snapshots/image-names.ts";

// Snapshot image names: where a pause pushes, which references are snapshots (a tenant's create
// may name none), and the reference parser both stand on.

const DIGEST = `sha256:${"ab".repeat(32)}`;

describe("snapshotTarget", () => {
  it("names one repository per sandbox container and one tag per pause", () => {
    expect(SNAPSHOT_REPOSITORY).toBe("agentbox-snapshots");
    expect(snapshotTarget("registry.agentbox.test", "team-a", "sb1x", "sandbox", 3)).toBe(
      "registry.agentbox.test/agentbox-snapshots/team-a/sb1x/sandbox:g3",
    );
    expect(snapshotTarget("127.0.0.1:5000", "ns", "id", "c", 1)).toBe(
      "127.0.0.1:5000/agentbox-snapshots/ns/id/c:g1",
    );
  });

  it("refuses parts that would make another or an invalid repository", () => {
    expect(() => snapshotTarget("registry.agentbox.test", "ns/x", "id", "c", 1)).toThrow(/namespace "ns\/x"/);
    expect(() => snapshotTarget("registry.agentbox.test", "ns", "ID", "c", 1)).toThrow(/sandbox id "ID"/);
    expect(() => snapshotTarget("registry.agentbox.test", "ns", "id", "", 1)).toThrow(/container ""/);
    expect(() => snapshotTarget("registry.agentbox.test", "ns", "id", "c", 0)).toThrow(/generation 0/);
    expect(() => snapshotTarget("registry.agentbox.test", "ns", "id", "c", 1.5)).toThrow(/generation/);
    expect(() => snapshotTarget("http://r", "ns", "id", "c", 1)).toThrow(/registry "http:\/\/r"/);
  });
});

describe("snapshotRepository and parseSnapshotRepository", () => {
  it("names the repository every pause of a sandbox container is a tag of", () => {
    const repo = snapshotRepository("registry.agentbox.test", "team-a", "sb1x", "sandbox");
    expect(repo).toBe("registry.agentbox.test/agentbox-snapshots/team-a/sb1x/sandbox");
    expect(snapshotTarget("registry.agentbox.test", "team-a", "sb1x", "sandbox", 2)).toBe(`${repo}:g2`);
    expect(() => snapshotRepository("registry.agentbox.test", "ns", "id", "C")).toThrow(/container "C"/);
    expect(parseSnapshotRepository(repo)).toEqual({
      registry: "registry.agentbox.test",
      repository: "agentbox-snapshots/team-a/sb1x/sandbox",
    });
    expect(parseSnapshotRepository("127.0.0.1:5000/agentbox-snapshots/ns/id/c")).toEqual({
      registry: "127.0.0.1:5000",
      repository: "agentbox-snapshots/ns/id/c",
    });
  });

  it("refuses anything an agent may not empty: other repositories, a tag or digest, look-alikes", () => {
    for (const name of [
      "registry.agentbox.test/agentbox/sandbox-a",
      "registry.agentbox.test/agentbox-snapshots",
      "registry.agentbox.test/agentbox-snapshots-x/ns/id/c",
      "registry.agentbox.test/x/agentbox-snapshots/ns/id/c",
      "registry.agentbox.test/agentbox-snapshots/ns/id/c:g1",
      `registry.agentbox.test/agentbox-snapshots/ns/id/c@${DIGEST}`,
      "registry.agentbox.test/agentbox-snapshots/ns/../c",
      "agentbox-snapshots/ns/id/c",
      "",
    ])
      expect(() => parseSnapshotRepository(name), name).toThrow(/is not a snapshot repository/);
  });
});

describe("isSnapshotImage", () => {
  it("is true under agentbox-snapshots/ whatever the registry host, tag or digest", () => {
    for (const ref of [
      "registry.agentbox.test/agentbox-snapshots/ns/id/sandbox:g1",
      `registry.agentbox.test/agentbox-snapshots/ns/id/sandbox:g1@${DIGEST}`,
      `other.example:5000/agentbox-snapshots/ns/id/sandbox@${DIGEST}`,
      "agentbox-snapshots/ns/id/sandbox", // docker.io/agentbox-snapshots/...
    ])
      expect(isSnapshotImage(ref), ref).toBe(true);
  });

  it("is false for other repositories, look-alikes and unreadable references", () => {
    for (const ref of [
      "registry.agentbox.test/agentbox/sandbox-a:1",
      "registry.agentbox.test/agentbox-snapshots:1",
      "registry.agentbox.test/agentbox-snapshots-x/ns/id/c:g1",
      "registry.agentbox.test/x/agentbox-snapshots/ns:g1",
      "registry.agentbox.test/Agentbox-Snapshots/ns/id/c:g1",
      "",
      "::",
    ])
      expect(isSnapshotImage(ref), ref).toBe(false);
  });
});

describe("parseImageReference", () => {
  it("splits host, repository, tag and digest, making docker.io's implicit parts explicit", () => {
    expect(parseImageReference(`registry.agentbox.test/agentbox/sandbox-a@${DIGEST}`)).toEqual({
      registry: "registry.agentbox.test",
      repository: "agentbox/sandbox-a",
      digest: DIGEST,
    });
    expect(parseImageReference(`127.0.0.1:5000/a/b:g2@${DIGEST}`)).toEqual({
      registry: "127.0.0.1:5000",
      repository: "a/b",
      tag: "g2",
      digest: DIGEST,
    });
    expect(parseImageReference("nginx")).toEqual({
      registry: "docker.io",
      repository: "library/nginx",
      tag: "latest",
    });
    expect(parseImageReference("localhost/x:1")).toEqual({
      registry: "localhost",
      repository: "x",
      tag: "1",
    });
  });

  it("writes back what it read", () => {
    const ref = `registry.agentbox.test/agentbox-snapshots/ns/id/c:g1@${DIGEST}`;
    expect(formatImageReference(parseImageReference(ref))).toBe(ref);
  });

  it("names what is wrong with a bad reference", () => {
    expect(() => parseImageReference("")).toThrow(/is not valid: it is empty/);
    expect(() => parseImageReference("registry.agentbox.test/Upper/x:1")).toThrow(/repository "Upper\/x"/);
    expect(() => parseImageReference("registry.agentbox.test/x:bad tag")).toThrow(/not valid/);
    expect(() => parseImageReference("registry.agentbox.test/x@sha256:short")).toThrow(/digest/);
  });
});

describe("staleKey", () => {
  it("is the container and the image's tag, ignoring a registry port and the digest", () => {
    const repo = "registry.agentbox.test/agentbox-snapshots/ns/sb1/sandbox";
    expect(staleKey("sandbox", `${repo}:g4@sha256:abc`)).toBe("sandbox:g4");
    expect(staleKey("c", "127.0.0.1:5000/a/b:g2")).toBe("c:g2");
    expect(staleKey("c", "127.0.0.1:5000/a/b@sha256:abc")).toBe("c:127.0.0.1:5000/a/b@sha256:abc");
  });
});
