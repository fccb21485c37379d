import { describe, expect, it } from "vitest";
import { requestedImages } from "../../lib/claims/requested-images.ts";
import type { CreateSandboxRequest } from "../../lib/claims/schemas.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { parseImageName, repositoryPrefix } from "../../lib/pool/image-name.ts";
import { tenantImageAnnotationIssues, tenantImageRefusal } from "../../lib/pool/tenant-images.ts";

const SANDBOX_CONTAINERS = "agentbox.navix.sh/sandbox-containers";
const TENANT_IMAGES = "agentbox.navix.sh/tenant-images";

const poolOf = (annotations?: Record<string, string>, main = "registry.local/sandbox/python:3.12") =>
  ({
    spec: {
      replicas: 1,
      template: {
        ...(annotations ? { metadata: { annotations } } : {}),
        spec: {
          containers: [
            { name: "main", image: main },
            { name: "side", image: "registry.local/proxy:2" },
          ],
        },
      },
    },
  }) as unknown as SandboxPool;
const pool = poolOf();
const req = (r: Partial<CreateSandboxRequest>) => ({ pool: "ns/p", ...r }) as CreateSandboxRequest;

describe("requestedImages", () => {
  it("uses the template's images by default, image for the first container, or containerImages as given", () => {
    expect(requestedImages(pool, req({}))).toEqual({
      main: "registry.local/sandbox/python:3.12",
      side: "registry.local/proxy:2",
    });
    expect(requestedImages(pool, req({ image: "registry.local/sandbox/python:3.13" }))).toEqual({
      main: "registry.local/sandbox/python:3.13",
    });
    expect(
      requestedImages(
        pool,
        req({ containerImages: { main: `registry.local/sandbox/python@sha256:${"a".repeat(64)}` } }),
      ),
    ).toEqual({ main: `registry.local/sandbox/python@sha256:${"a".repeat(64)}` });
    // A container may be given the image its template names: nothing a tenant chose.
    expect(requestedImages(pool, req({ containerImages: { side: "registry.local/proxy:2" } }))).toEqual({
      side: "registry.local/proxy:2",
    });
  });

  it("explains a request the pool cannot serve", () => {
    expect(requestedImages(pool, req({ containerImages: { ghost: "x" } }))).toBe(
      'containerImages: no container "ghost" in the pool (containers: main, side)',
    );
    expect(requestedImages({ spec: { replicas: 1 } } as SandboxPool, req({}))).toBe(
      "the pool's template has no containers",
    );
  });

  // Before the rule, any image went into any container: these were all accepted.
  it("refuses an image from another repository, naming the field and the rule", () => {
    expect(requestedImages(pool, req({ image: "evil.example/anything:1" }))).toBe(
      'image: image "evil.example/anything:1" (repository evil.example/anything) is not allowed in container "main" (allowed: registry.local/sandbox/python, any tag or digest; the container\'s own repository, as pod template annotation agentbox.navix.sh/tenant-images is unset)',
    );
  });

  it("refuses any image of a sidecar, even one its allowlist would match", () => {
    const refusal = requestedImages(
      poolOf({ [TENANT_IMAGES]: "*" }),
      req({ containerImages: { side: "registry.local/proxy:3" } }),
    );
    expect(refusal).toBe(
      "containerImages.side: container \"side\" does not take a tenant's image (the sandbox's containers: main; pod template annotation agentbox.navix.sh/sandbox-containers)",
    );
  });

  it("follows the annotations: named sandbox containers, the allowlist for each", () => {
    const annotated = poolOf({
      [SANDBOX_CONTAINERS]: "main, side",
      [TENANT_IMAGES]: "ghcr.io/org/*, python",
    });
    expect(
      requestedImages(annotated, req({ containerImages: { main: "python:3", side: "ghcr.io/org/proxy:9" } })),
    ).toEqual({ main: "python:3", side: "ghcr.io/org/proxy:9" });
    // The template's own repository is no longer allowed once the allowlist is set.
    expect(requestedImages(annotated, req({ image: "registry.local/sandbox/python:3.13" }))).toMatch(
      /^image: .* \(allowed: ghcr\.io\/org\/\*, docker\.io\/library\/python, any tag or digest; pod template annotation agentbox\.navix\.sh\/tenant-images\)$/,
    );
  });
});

describe("tenantImageRefusal: spellings that must not pass for an allowed repository", () => {
  const template = (annotations: Record<string, string> | undefined, image: string) => ({
    ...(annotations ? { metadata: { annotations } } : {}),
    spec: { containers: [{ name: "main", image }] },
  });
  const refused = (annotations: Record<string, string> | undefined, own: string, image: string) =>
    tenantImageRefusal(template(annotations, own), [{ field: "image", container: "main", image }]);

  it.each([
    ["python:3", `python@sha256:${"b".repeat(64)}`],
    ["python:3", "docker.io/library/python:3.13"],
    ["python:3", "index.docker.io/library/python"],
    ["python:3", "docker.io/python:3-slim"],
    ["docker.io/library/python:3", `python:3.12@sha256:${"c".repeat(64)}`],
    ["registry.local:5000/app:1", "REGISTRY.local:5000/app:2"],
    ["[::1]:5000/app:1", "[::1]:5000/app:2"],
  ])("the default allowlist of %s takes %s (same repository)", (own, image) => {
    expect(refused(undefined, own, image)).toBeUndefined();
  });

  it.each([
    ["python:3", "docker.io/library/python.evil/x:1"],
    ["python:3", "python.evil/x:1"],
    ["python:3", "pythonx:3"],
    ["python:3", "library/python/evil:3"],
    ["python:3", "localhost/python:3"],
    ["python:3", "docker.io/evil/python:3"],
    ["python:3", "registry-1.docker.io/library/python:3"],
    ["registry.local/app:1", "registry.local:5000/app:1"],
    ["registry.local:5000/app:1", "registry.local/app:1"],
    ["registry.local/app:1", "registry.local.evil.example/app:1"],
    ["registry.local/app:1", "registry.local/app/../evil:1"],
    ["registry.local/app:1", "registry.local/App:1"],
    ["registry.local/app:1", "registry.local/app:1@sha256:short"],
    ["registry.local/app:1", "registry.local/app:bad/tag"],
  ])("the default allowlist of %s refuses %s", (own, image) => {
    expect(refused(undefined, own, image)).toMatch(/^image: /);
  });

  it.each([
    ["ghcr.io/org/*", "ghcr.io/org/app:1", true],
    ["ghcr.io/org/*", `GHCR.io/org/team/app@sha256:${"d".repeat(64)}`, true],
    ["ghcr.io/org/*", "ghcr.io/organisation/app:1", false],
    ["ghcr.io/org/*", "ghcr.io:443/org/app:1", false],
    ["ghcr.io/org/*", "ghcr.io.evil.example/org/app:1", false],
    ["library/py*", "python:3", true],
    ["library/py*", "pypy:3", true],
    ["library/py*", "docker.io/pyorg/app:1", false],
    ["docker.io/*", "busybox", true],
    ["docker.io/*", "quay.io/busybox", false],
    ["*", "anything.example/x:1", true],
    ["", "registry.local/app:2", false],
  ])("allowlist %j, image %s: allowed %s", (allow, image, ok) => {
    const answer = refused({ [TENANT_IMAGES]: allow }, "registry.local/app:1", image);
    if (ok) expect(answer).toBeUndefined();
    else expect(answer).toMatch(/^image: .*tenant-images/);
  });

  it("fails closed on a malformed annotation, naming it", () => {
    expect(refused({ [TENANT_IMAGES]: "ghcr.io*" }, "registry.local/app:1", "registry.local/app:2")).toMatch(
      /^image: the pool's pod template annotation agentbox\.navix\.sh\/tenant-images is malformed/,
    );
    // The template's own image still goes in: it is no tenant's choice.
    expect(
      refused({ [TENANT_IMAGES]: "ghcr.io*" }, "registry.local/app:1", "registry.local/app:1"),
    ).toBeUndefined();
  });

  it("takes no tenant image into a container that names none, unless the allowlist says", () => {
    const bare = { spec: { containers: [{ name: "main" }] } };
    expect(tenantImageRefusal(bare, [{ field: "image", container: "main", image: "a:1" }])).toMatch(
      /allowed: none/,
    );
  });
});

describe("tenantImageAnnotationIssues", () => {
  const withAnnotations = (annotations: Record<string, string>) => ({
    metadata: { annotations },
    spec: {
      containers: [
        { name: "main", image: "a:1" },
        { name: "side", image: "b:1" },
      ],
    },
  });

  it("accepts well-formed annotations", () => {
    expect(
      tenantImageAnnotationIssues(
        withAnnotations({ [SANDBOX_CONTAINERS]: "main,side", [TENANT_IMAGES]: " ghcr.io/org/* , python,* " }),
      ),
    ).toEqual([]);
    expect(tenantImageAnnotationIssues(withAnnotations({ [TENANT_IMAGES]: "" }))).toEqual([]);
  });

  it.each([
    [SANDBOX_CONTAINERS, "", /at least one container/],
    [SANDBOX_CONTAINERS, "main,ghost", /"ghost" is no container of the template \(containers: main, side\)/],
    [SANDBOX_CONTAINERS, "main,main", /twice/],
    [SANDBOX_CONTAINERS, "Main", /not a container name/],
    [TENANT_IMAGES, "ghcr.io/org/app,", /empty entry/],
    [TENANT_IMAGES, "python:3", /tag or digest/],
    [TENANT_IMAGES, `python@sha256:${"e".repeat(64)}`, /tag or digest/],
    [TENANT_IMAGES, "ghcr.io", /not a registry: .* ghcr\.io\/\*/],
    [TENANT_IMAGES, "ghcr.io*", /a prefix has one "\*"/],
    [TENANT_IMAGES, "py*", /a prefix has one "\*"/],
    [TENANT_IMAGES, "ghcr.io/*/app", /a prefix has one "\*"/],
    [TENANT_IMAGES, "ghcr.io/Org/*", /a prefix/],
    [TENANT_IMAGES, "ghcr.io/org/app:*", /a prefix/],
    [TENANT_IMAGES, "not an image", /not an image repository/],
  ])("refuses %s=%j", (annotation, value, message) => {
    const issues = tenantImageAnnotationIssues(withAnnotations({ [annotation]: value }));
    expect(issues).toEqual([{ annotation, message: expect.stringMatching(message) }]);
  });
});

describe("parseImageName and repositoryPrefix", () => {
  it("spells out Docker Hub, lowers the registry, keeps tag and digest apart", () => {
    expect(parseImageName("python")).toEqual({ repository: "docker.io/library/python" });
    expect(parseImageName(`Ghcr.IO/org/app:1@sha256:${"f".repeat(64)}`)).toEqual({
      repository: "ghcr.io/org/app",
      tag: "1",
      digest: `sha256:${"f".repeat(64)}`,
    });
    expect(parseImageName("UPPER/case")).toEqual({ repository: "upper/case" });
    expect(parseImageName("localhost:5000")).toEqual({
      repository: "docker.io/library/localhost",
      tag: "5000",
    });
    for (const bad of ["", "a/UPPER", "a//b", "a/", ":1", "a@sha256:", "a:-x", `${"a".repeat(256)}`])
      expect(parseImageName(bad), bad).toBeUndefined();
  });

  it("normalises prefixes only where a whole registry is named", () => {
    expect(repositoryPrefix("ghcr.io/org/")).toBe("ghcr.io/org/");
    expect(repositoryPrefix("myorg/")).toBe("docker.io/myorg/");
    expect(repositoryPrefix("index.docker.io/")).toBe("docker.io/");
    expect(repositoryPrefix("ghcr.io")).toBeUndefined();
  });
});
