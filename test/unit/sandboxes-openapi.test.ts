import { describe, expect, it } from "vitest";
import { openApiDocument } from "../../lib/claims/openapi.ts";

describe("openApiDocument", () => {
  it("describes every /v1 route with request bodies from the validating schemas", () => {
    const doc = openApiDocument() as unknown as {
      paths: Record<string, Record<string, unknown>>;
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    expect(Object.keys(doc.paths).sort()).toEqual([
      "/history",
      "/sandboxes",
      "/sandboxes/{id}",
      "/sandboxes/{id}/logs",
      "/sandboxes/{id}/metrics",
      "/sandboxes/{id}/network",
      "/sandboxes/{id}/timeout",
      "/templates",
    ]);
    expect(Object.keys(doc.paths["/sandboxes"] ?? {}).sort()).toEqual(["get", "post"]);
    const create = doc.components.schemas.CreateSandboxRequest?.properties ?? {};
    for (const field of [
      "pool",
      "template",
      "image",
      "containerImages",
      "envVars",
      "metadata",
      "idleTimeout",
      "startupTimeout",
      "wait",
      "waitTimeout",
      "network",
    ]) {
      expect(create).toHaveProperty(field);
    }
    expect(doc.components.schemas.TimeoutRequest?.properties).toHaveProperty("timeout");
    expect(Object.keys(doc.components.schemas.NetworkUpdateRequest?.properties ?? {}).sort()).toEqual([
      "allowInternetAccess",
      "allowOut",
      "denyOut",
    ]);
    // A create answers how its sandbox is reached, as its GET does.
    expect(JSON.stringify(doc.paths["/sandboxes"]?.post)).toContain(
      '"201":{"description":"claimed","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Sandbox"}}}}',
    );
    expect(doc.components.schemas.Sandbox?.properties?.access).toMatchObject({
      description: expect.stringContaining("the create's answer"),
    });
    expect(JSON.stringify(doc)).not.toContain("undefined");
  });
});
