import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { tenantImageRefusal } from "../pool/tenant-images.ts";
import { isSnapshotImage } from "../snapshots/image-names.ts";
import type { CreateSandboxRequest } from "./schemas.ts";

/**
 * requestedImages is container → image for a claim: containerImages as given (each must name a
 * container of the pool), else `image` for the pool's first container, else the pool template's
 * own images. A string is the reason the request cannot be served by this pool (answered 400):
 * an unknown container, an image the pool's tenant-image rule refuses (tenantImageRefusal:
 * sandbox containers only, images from the template's allowlist), or a snapshot image.
 */
export function requestedImages(
  pool: SandboxPool,
  req: CreateSandboxRequest,
): Record<string, string> | string {
  // A paused sandbox's snapshot images run only through its owner's resume (ADR 0045).
  const asked = [
    ...(req.image ? [["image", req.image]] : []),
    ...Object.entries(req.containerImages ?? {}).map(([c, image]) => [`containerImages.${c}`, image]),
  ];
  const snapshot = asked.find(([, image]) => isSnapshotImage(image ?? ""));
  if (snapshot)
    return `${snapshot[0]}: ${JSON.stringify(snapshot[1])} is a paused sandbox's snapshot image; only its resume runs it`;
  const template = pool.spec.template;
  const containers = (
    (template?.spec as { containers?: { name?: string; image?: string }[] } | undefined)?.containers ?? []
  ).filter((c): c is { name: string; image?: string } => typeof c.name === "string");
  if (req.containerImages) {
    const unknown = Object.keys(req.containerImages).filter((n) => !containers.some((c) => c.name === n));
    if (unknown.length)
      return `containerImages: no container ${unknown.map((n) => `"${n}"`).join(", ")} in the pool (containers: ${containers.map((c) => c.name).join(", ")})`;
    const asked = Object.entries(req.containerImages).map(([container, image]) => ({
      field: `containerImages.${container}`,
      container,
      image,
    }));
    return tenantImageRefusal(template, asked) ?? { ...req.containerImages };
  }
  const first = containers[0];
  if (!first) return "the pool's template has no containers";
  if (req.image)
    return (
      tenantImageRefusal(template, [{ field: "image", container: first.name, image: req.image }]) ?? {
        [first.name]: req.image,
      }
    );
  return Object.fromEntries(containers.filter((c) => c.image).map((c) => [c.name, c.image as string]));
}
