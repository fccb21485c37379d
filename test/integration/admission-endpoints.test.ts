import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpsRequest } from "./support/http.ts";
import { kube, newNamespace } from "./support/kube.ts";
import { GROUP, Samples, VERSION } from "./support/samples.ts";

// The admission endpoints over HTTPS, called directly: what the apiserver never sends (malformed
// or unauthenticated requests) must get a clean 4xx, never a crash.

const { custom, core, cluster } = kube();

let samples: Samples;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  const created = await newNamespace(core, "webhook");
  cleanup = created.cleanup;
  samples = new Samples(custom, created.ns);
});
afterAll(async () => {
  await samples.cleanup();
  await cleanup();
});

describe("admission webhook endpoints", () => {
  const url = (path: string) => `https://127.0.0.1:${cluster.hostPort}/admission/${path}`;
  const auth = () => ({
    authorization: `Bearer ${cluster.callbackToken}`,
    "content-type": "application/json",
  });
  const review = (object: unknown) =>
    JSON.stringify({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: {
        uid: "u-1",
        kind: { group: GROUP, version: VERSION, kind: "SandboxEnv" },
        operation: "CREATE",
        object,
      },
    });

  it.each([
    ["not JSON", "hello"],
    ["truncated JSON", review({ spec: { mode: "WarmPool" } }).slice(0, 60)],
    ["an empty body", ""],
    ["a JSON array", "[1,2]"],
    ["the wrong apiVersion", review({}).replace("admission.k8s.io/v1", "admission.k8s.io/v1beta1")],
    [
      "no request.uid",
      JSON.stringify({
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        request: { kind: { group: GROUP, version: VERSION, kind: "SandboxEnv" }, operation: "CREATE" },
      }),
    ],
  ])("answer 400 to %s, never crash", async (_what, body) => {
    for (const path of ["validate", "mutate"]) {
      const res = await httpsRequest(url(path), cluster.caCert, { method: "POST", headers: auth(), body });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body).error.code).toBe("BadRequest");
    }
    const health = await httpsRequest(`https://127.0.0.1:${cluster.hostPort}/healthz`, cluster.caCert);
    expect(health.status).toBe(200);
  });

  it("names the missing field of a malformed review", async () => {
    const body = JSON.stringify({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: { kind: { group: GROUP, version: VERSION, kind: "SandboxEnv" }, operation: "CREATE" },
    });
    const res = await httpsRequest(url("validate"), cluster.caCert, {
      method: "POST",
      headers: auth(),
      body,
    });
    expect(JSON.parse(res.body).error.fields.map((f: { path: string }) => f.path)).toContain("request.uid");
  });

  it("refuse callers without the apiserver's token (401)", async () => {
    const body = review(samples.byKind().SandboxEnv);
    const none = await httpsRequest(url("validate"), cluster.caCert, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(none.status).toBe(401);
    const wrong = await httpsRequest(url("validate"), cluster.caCert, {
      method: "POST",
      headers: { ...auth(), authorization: "Bearer nope" },
      body,
    });
    expect(wrong.status).toBe(401);
  });

  it("refuse bodies over the size limit (413)", async () => {
    const res = await httpsRequest(url("validate"), cluster.caCert, {
      method: "POST",
      headers: auth(),
      body: Buffer.alloc(8 * 1024 * 1024, 0x20),
    });
    expect(res.status).toBe(413);
  });

  it("answer a well-formed review with a decision (allowed, and denied with reasons)", async () => {
    const ok = await httpsRequest(url("validate"), cluster.caCert, {
      method: "POST",
      headers: auth(),
      body: review(samples.byKind().SandboxEnv),
    });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body).response).toEqual({ uid: "u-1", allowed: true });
    const bad = structuredClone(samples.byKind().SandboxEnv!);
    bad.spec!.mode = "OnDemandJob";
    const denied = await httpsRequest(url("validate"), cluster.caCert, {
      method: "POST",
      headers: auth(),
      body: review(bad),
    });
    const response = JSON.parse(denied.body).response;
    expect(response.allowed).toBe(false);
    expect(response.status.message).toContain("spec.mode");
  });

  it("the audit sink answers 400 to malformed batches and 401 without the token", async () => {
    const audit = `https://127.0.0.1:${cluster.hostPort}/audit`;
    const post = (body: string, headers: Record<string, string> = auth()) =>
      httpsRequest(audit, cluster.caCert, { method: "POST", headers, body });
    expect((await post("{oops")).status).toBe(400);
    const wrongShape = await post(
      JSON.stringify({ apiVersion: "audit.k8s.io/v1", kind: "EventList", items: [{ verb: 3 }] }),
    );
    expect(wrongShape.status).toBe(400);
    expect(JSON.parse(wrongShape.body).error.fields.map((f: { path: string }) => f.path)).toContain(
      "items[0].verb",
    );
    expect(
      (
        await post(JSON.stringify({ apiVersion: "audit.k8s.io/v1", kind: "EventList", items: [] }), {
          "content-type": "application/json",
        })
      ).status,
    ).toBe(401);
    const ok = await post(JSON.stringify({ apiVersion: "audit.k8s.io/v1", kind: "EventList", items: [] }));
    expect(ok.status).toBe(200);
  });
});
