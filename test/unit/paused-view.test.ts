import { describe, expect, it } from "vitest";
import { isShownPaused, PAUSED_PHASE, pausedView, ResumeRequest } from "../../lib/claims/paused-view.ts";
import { NETWORK_ANNOTATION } from "../../lib/crd/keys.ts";
import { parseWith } from "../../lib/crd/parse-with.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxSnapshot } from "../../lib/crd/sandbox-snapshot.ts";
import { e2bDetail, e2bListed, isE2bVisible, TEMPLATE_ID_ANNOTATION } from "../../lib/e2b/answers.ts";
import { pausedOffset, pausedPage } from "../../lib/e2b/list-pages.ts";
import { pausedPod } from "../../lib/e2b/paused.ts";

// A paused sandbox as the native and E2B APIs show it, from its SandboxSnapshot, on plain data.

const now = new Date("2026-12-02T10:00:00Z");

function snapshot(phase: string | undefined, over: Partial<SandboxSnapshot["spec"]["claim"]> = {}) {
  return {
    metadata: { name: "sbx-a1", namespace: "team-a", generation: 1 },
    spec: {
      sandboxId: "sbx-a1",
      pool: "python",
      source: {
        node: "n1",
        pod: "python-x",
        podUID: "u1",
        containers: [{ name: "sandbox", containerID: "containerd://c1", image: "py:1" }],
      },
      claim: {
        containerImages: { sandbox: "py:1" },
        team: "research",
        user: "alice",
        metadata: { run: "7" },
        annotations: { [TEMPLATE_ID_ANNOTATION]: "python" },
        markAnnotations: { [NETWORK_ANNOTATION]: JSON.stringify({ denyOut: ["192.0.2.0/24"] }) },
        idleTimeoutSeconds: 600,
        lifetimeSeconds: 240,
        ...over,
      },
      retainUntil: "2026-12-09T10:00:00Z",
    },
    status: {
      ...(phase ? { phase } : {}),
      images: { sandbox: "registry.agentbox.test/agentbox-snapshots/team-a/sbx-a1/sandbox:g1@sha256:ab" },
      committedAt: "2026-12-02T09:59:00Z",
      pausedAt: "2026-12-02T09:59:30Z",
      bytes: 4096,
    },
  } as SandboxSnapshot;
}

describe("pausedView", () => {
  it("shows a paused sandbox: its id, owner, metadata, snapshot images and size, and the lifetime it had left", () => {
    expect(pausedView(snapshot("Paused"), now)).toEqual({
      sandboxId: "sbx-a1",
      namespace: "team-a",
      pool: "python",
      pod: "",
      phase: PAUSED_PHASE,
      team: "research",
      user: "alice",
      images: { sandbox: "registry.agentbox.test/agentbox-snapshots/team-a/sbx-a1/sandbox:g1@sha256:ab" },
      metadata: { run: "7" },
      idleTimeoutSeconds: 600,
      pausedAt: "2026-12-02T09:59:30Z",
      lifetimeSeconds: 240,
      retainUntil: "2026-12-09T10:00:00Z",
      snapshotBytes: 4096,
    });
  });

  it("says a resume is under way, and leaves out what the snapshot does not hold", () => {
    const view = pausedView(snapshot("Resuming", { user: undefined, lifetimeSeconds: 0 }), now);
    expect(view.detail).toEqual({
      reason: "Resuming",
      message: expect.any(String),
      lastUpdatedTime: now.toISOString(),
    });
    expect(view).not.toHaveProperty("user");
    expect(view).not.toHaveProperty("lifetimeSeconds");
    expect(view).not.toHaveProperty("endAt");
  });

  it("shows only Paused and Resuming snapshots: the others stand beside a pod, which is the sandbox", () => {
    expect(["Paused", "Resuming"].map((p) => isShownPaused(snapshot(p)))).toEqual([true, true]);
    expect(
      [undefined, "Committing", "Committed", "Resumed", "Failed"].map((p) => isShownPaused(snapshot(p))),
    ).toEqual([false, false, false, false, false]);
    const killed = snapshot("Paused");
    killed.metadata = { ...killed.metadata, deletionTimestamp: "2026-12-02T10:00:00Z" };
    expect(isShownPaused(killed)).toBe(false);
  });

  it("reads the native resume's optional lifetime", () => {
    expect(parseWith(ResumeRequest, undefined)).toEqual({ ok: true, value: { waitTimeout: 60 } });
    expect(parseWith(ResumeRequest, { timeout: 60, waitTimeout: 0 })).toEqual({
      ok: true,
      value: { timeout: 60, waitTimeout: 0 },
    });
    expect(parseWith(ResumeRequest, { timeout: 0 }).ok).toBe(false);
    expect(parseWith(ResumeRequest, { waitTimeout: 601 }).ok).toBe(false);
    expect(parseWith(ResumeRequest, { timeout: 60, wait: true }).ok).toBe(false);
  });
});

describe("E2B's paused sandbox", () => {
  const pool = {
    spec: {
      template: {
        spec: { containers: [{ name: "sandbox", resources: { limits: { cpu: "2", memory: "1Gi" } } }] },
      },
    },
  } as unknown as SandboxPool;

  it("lists as state paused, with its template, its pool's resources and its retention as endAt", () => {
    const s = snapshot("Paused");
    const view = pausedView(s, now);
    expect(isE2bVisible(view)).toBe(true);
    expect(e2bListed(pausedPod(s, pool), view, { envdVersion: "0.2.0" })).toMatchObject({
      templateID: "python",
      sandboxID: "sbx-a1",
      state: "paused",
      startedAt: "2026-12-02T09:59:30Z",
      endAt: "2026-12-09T10:00:00Z",
      cpuCount: 2,
      memoryMB: 1024,
      metadata: { run: "7" },
    });
  });

  it("details its network settings; without its pool (gone), the pool as template and E2B's defaults", () => {
    const s = snapshot("Paused", { annotations: {} });
    const detail = e2bDetail(
      pausedPod(s, undefined),
      pausedView(s, now),
      { envdVersion: "0.2.0" },
      undefined,
    );
    expect(detail).toMatchObject({
      templateID: "team-a/python",
      state: "paused",
      cpuCount: 1,
      memoryMB: 0,
      network: { denyOut: ["192.0.2.0/24"] },
    });
    expect(detail).not.toHaveProperty("envdAccessToken");
  });
});

describe("pausedPage", () => {
  const ids = ["a", "b", "c"];

  it("puts the paused sandboxes first and leaves the rest of the page to the running ones", () => {
    expect(pausedPage(ids, 0, 5)).toEqual({ items: ids, room: 2 });
    expect(pausedPage([], 0, 5)).toEqual({ items: [], room: 5 });
  });

  it("pages through many with a token of its own, then goes on with the running ones", () => {
    const first = pausedPage(ids, 0, 2);
    expect(first).toEqual({ items: ["a", "b"], next: "paused:2", room: 0 });
    const offset = pausedOffset(first.next);
    expect(offset).toBe(2);
    expect(pausedPage(ids, offset as number, 2)).toEqual({ items: ["c"], room: 1 });
  });

  it("still gives a token when the paused ones fill the page exactly and running ones follow", () => {
    const full = pausedPage(ids, 0, 3, true);
    expect(full).toEqual({ items: ids, next: "paused:3", room: 0 });
    // The next page starts the running ones with the whole page free.
    expect(pausedPage(ids, pausedOffset(full.next) as number, 3, true)).toEqual({ items: [], room: 3 });
    // Paused ones only: the list ends there.
    expect(pausedPage(ids, 0, 3, false)).toEqual({ items: ids, room: 0 });
  });

  it("tells its tokens from the apiserver's, and refuses a garbled one", () => {
    expect(pausedOffset(undefined)).toBeUndefined();
    expect(pausedOffset("eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ")).toBeUndefined();
    expect(pausedOffset("paused:x")).toEqual({ error: expect.any(String) });
  });
});
