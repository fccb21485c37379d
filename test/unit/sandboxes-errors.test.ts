import { describe, expect, it } from "vitest";
import { badRequest, conflict, notFound, unauthorized, unavailable } from "../../lib/claims/errors.ts";
import { TimeoutRequest } from "../../lib/claims/schemas.ts";
import { parseWith } from "../../lib/crd/parse-with.ts";

describe("API errors", () => {
  it.each([
    ["badRequest", badRequest("bad"), 400, "BadRequest"],
    ["notFound", notFound("gone"), 404, "NotFound"],
    ["unavailable", unavailable("busy"), 503, "Unavailable"],
    ["unauthorized", unauthorized(), 401, "Unauthorized"],
    ["conflict", conflict("raced"), 409, "Conflict"],
  ] as const)("%s → %i %s", (_, error, status, code) => {
    expect(error.status).toBe(status);
    expect(error.body.error.code).toBe(code);
    expect(error.body.error.message).not.toBe("");
    expect(Object.keys(error.body.error).sort()).toEqual(["code", "message"]);
  });

  it("badRequest lists parseWith's field issues", () => {
    const parsed = parseWith(TimeoutRequest, { idleTimeout: -1, extra: true });
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(badRequest("invalid body", parsed.issues).body).toEqual({
      error: {
        code: "BadRequest",
        message: "invalid body",
        fields: [
          { path: "idleTimeout", message: "must be at least 0 seconds" },
          { path: "extra", message: "unknown field" },
        ],
      },
    });
  });

  it("notFound carries the choices", () => {
    expect(notFound('no template "py"', ["python", "node"]).body.error).toEqual({
      code: "NotFound",
      message: 'no template "py"',
      choices: ["python", "node"],
    });
  });

  it("unauthorized does not say whether a key was sent", () => {
    expect(unauthorized().body.error.message).toMatch(/API key/);
  });
});
