import { describe, expect, it } from "vitest";
import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";
import { requestedImages } from "../../lib/sandboxes/requested-images.ts";
import type { CreateSandboxRequest } from "../../lib/sandboxes/schemas.ts";

const pool = {
  spec: {
    replicas: 1,
    template: {
      spec: {
        containers: [
          { name: "main", image: "base:1" },
          { name: "side", image: "proxy:2" },
        ],
      },
    },
  },
} as unknown as SandboxPool;
const req = (r: Partial<CreateSandboxRequest>) => ({ pool: "ns/p", ...r }) as CreateSandboxRequest;

describe("requestedImages", () => {
  it("uses the template's images by default, image for the first container, or containerImages as given", () => {
    expect(requestedImages(pool, req({}))).toEqual({ main: "base:1", side: "proxy:2" });
    expect(requestedImages(pool, req({ image: "py:3" }))).toEqual({ main: "py:3" });
    expect(requestedImages(pool, req({ containerImages: { side: "proxy:3" } }))).toEqual({ side: "proxy:3" });
  });

  it("explains a request the pool cannot serve", () => {
    expect(requestedImages(pool, req({ containerImages: { ghost: "x" } }))).toBe(
      'containerImages: no container "ghost" in the pool (containers: main, side)',
    );
    expect(requestedImages({ spec: { replicas: 1 } } as SandboxPool, req({}))).toBe(
      "the pool's template has no containers",
    );
  });
});
