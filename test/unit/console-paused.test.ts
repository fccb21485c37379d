import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { withPausedViews } from "../../lib/claims/sandbox-pod.ts";
import type { SandboxView } from "../../lib/claims/sandbox-view.ts";
import { bytes } from "../../lib/console/layout.ts";
import { sandboxesView } from "../../lib/console/pages.ts";
import { PAUSED_NOTE, sandboxNotResumedView, sandboxPageView } from "../../lib/console/sandbox-page.ts";
import { STOP_REASON, STOP_REASON_ANNOTATION } from "../../lib/crd/keys.ts";
import type { LifecycleEvent } from "../../lib/history/lifecycle-event.ts";
import type { UsageSample } from "../../lib/usage/sample.ts";

// The console's paused sandboxes (issue #39), on plain data: the list's row (phase, when paused,
// kept until, size, Resume and Kill), the sandbox page (it says it is paused, its pauses and
// resumes from the history), and which row each sandbox gets when a pod and a snapshot both
// carry its id.

const NOW = new Date("2026-12-02T10:00:00Z");
const render = async (h: unknown) => String(await h);
/** rowOf is the list's row of one sandbox. */
const rowOf = (page: string, id: string) =>
  new RegExp(`<tr data-sandbox="${id}">[\\s\\S]*?</tr>`).exec(page)?.[0] ?? "";
/** actions are the forms a fragment posts, as "action label". */
const actions = (fragment: string) =>
  [
    ...fragment.matchAll(
      /<form class="inline" method="post" action="([^"]*)"><button>([^<]*)<\/button><\/form>/g,
    ),
  ].map((m) => `${m[1]} ${m[2]}`);

const running: SandboxView = {
  sandboxId: "sbx-run",
  namespace: "ns",
  pool: "p",
  pod: "p-1",
  phase: "running",
  team: "t",
  user: "u",
  claimedAt: "2026-12-02T09:59:00Z",
  startedAt: "2026-12-02T09:59:05Z",
  images: {},
  metadata: {},
};
const paused: SandboxView = {
  sandboxId: "sbx-zz",
  namespace: "ns",
  pool: "p",
  pod: "",
  phase: "paused",
  team: "t",
  user: "u",
  images: { sandbox: "registry.test/agentbox-snapshots/ns/sbx-zz/sandbox:g1@sha256:ab" },
  metadata: {},
  pausedAt: "2026-12-02T09:58:30Z",
  retainUntil: "2026-12-09T09:58:30Z",
  lifetimeSeconds: 240,
  snapshotBytes: 1536 * 1024,
};

describe("the console's list of sandboxes", () => {
  it("shows a paused sandbox's phase, pause, retention and size, with Resume and Kill; a running one keeps Release", async () => {
    const page = await render(sandboxesView([running, paused], new Map(), NOW));
    const row = rowOf(page, "sbx-zz");
    expect(row).toContain('<span class="phase paused">paused</span>');
    expect(row).toContain("paused 90s ago");
    expect(row).toContain("kept until 2026-12-09T09:58:30Z");
    expect(row).toContain("snapshot 1.5 MiB");
    expect(row).not.toContain("claimed");
    expect(actions(row)).toEqual(["/ui/sandboxes/sbx-zz/resume Resume", "/ui/sandboxes/sbx-zz/release Kill"]);
    const other = rowOf(page, "sbx-run");
    expect(other).toContain("claimed 60s ago");
    expect(actions(other)).toEqual(["/ui/sandboxes/sbx-run/release Release"]);
  });

  it("leaves out what a paused sandbox's snapshot does not say yet, and says a resume is under way", async () => {
    const { snapshotBytes: _s, retainUntil: _r, ...bare } = paused;
    const resuming = {
      ...bare,
      detail: {
        reason: "Resuming",
        message: "a resume is claiming a pod",
        lastUpdatedTime: NOW.toISOString(),
      },
    };
    const row = rowOf(await render(sandboxesView([resuming], new Map(), NOW)), "sbx-zz");
    expect(row).not.toContain("kept until");
    expect(row).not.toContain("snapshot ");
    expect(row).toContain("Resuming: a resume is claiming a pod");
    expect(actions(row)).toHaveLength(2);
  });
});

describe("sizes", () => {
  it("are written in the largest unit that keeps them readable", () => {
    expect([512, 1536, 1536 * 1024, 10 * 1024 ** 3].map(bytes)).toEqual([
      "512 B",
      "1.5 KiB",
      "1.5 MiB",
      "10.0 GiB",
    ]);
  });
});

describe("the page of a paused sandbox", () => {
  const event = (kind: "paused" | "resumed", n: number, at: string, pod: string, size?: number) =>
    ({
      sandboxId: "sbx-zz",
      kind,
      n,
      at,
      namespace: "ns",
      poolName: "p",
      podName: pod,
      team: "t",
      user: "u",
      images: {},
      ...(size === undefined ? {} : { bytes: size }),
    }) as LifecycleEvent;
  const events = [
    event("paused", 1, "2026-12-02T09:50:00Z", "p-1", 2048),
    event("resumed", 1, "2026-12-02T09:55:00Z", "p-2"),
    event("paused", 2, "2026-12-02T09:58:30Z", "p-2", 1536 * 1024),
  ];
  const sample = (at: string): UsageSample => ({
    sandboxId: "sbx-zz",
    at,
    cpuCount: 1,
    cpuUsedPct: 10,
    memUsed: 64 * 1024 * 1024,
    memTotal: 512 * 1024 * 1024,
    memCache: 0,
    diskUsed: 0,
    diskTotal: 0,
  });

  it("says it is paused, shows its snapshot and its buttons, and lists its pauses and resumes in order", async () => {
    const page = await render(
      sandboxPageView(
        {
          sandboxId: "sbx-zz",
          live: paused,
          events,
          samples: [sample("2026-12-02T09:57:00Z"), sample("2026-12-02T09:58:00Z")],
        },
        NOW,
      ),
    );
    expect(page).toContain(PAUSED_NOTE);
    expect(page).toContain('<tr><th>phase</th><td><span class="phase paused">paused</span></td></tr>');
    expect(page).toContain("<tr><th>paused</th><td>2026-12-02T09:58:30Z (90s ago)</td></tr>");
    expect(page).toContain("<tr><th>kept until</th><td>2026-12-09T09:58:30Z</td></tr>");
    expect(page).toContain("<tr><th>size</th><td>1.5 MiB</td></tr>");
    expect(page).not.toContain("<tr><th>pod</th>");
    expect(actions(page)).toEqual([
      "/ui/sandboxes/sbx-zz/resume Resume",
      "/ui/sandboxes/sbx-zz/release Kill",
    ]);
    expect([...page.matchAll(/data-event="([^"]*)"/g)].map((m) => m[1])).toEqual([
      "paused-1",
      "resumed-1",
      "paused-2",
    ]);
    expect(page).toMatch(
      /<td>2026-12-02T09:50:00Z<\/td><td>paused <span class="muted">#1<\/span><\/td><td>p-1<\/td>\s*<td>2.0 KiB<\/td>/,
    );
    // Paused, its charts end with its last sample, not now.
    expect(page).toMatch(/from 09:57:00 to 09:58:00 UTC/);
  });

  it("a running sandbox shows its events without the paused note or buttons; a history that cannot answer says so", async () => {
    const live = { ...running, sandboxId: "sbx-zz" };
    const resumed = await render(
      sandboxPageView({ sandboxId: "sbx-zz", live, events: events.slice(0, 2), samples: [] }, NOW),
    );
    expect(resumed).not.toContain(PAUSED_NOTE);
    expect(actions(resumed)).toEqual([]);
    expect(resumed).toContain('data-event="resumed-1"');
    const down = await render(
      sandboxPageView({ sandboxId: "sbx-zz", live: paused, events: "down", samples: [] }, NOW),
    );
    expect(down).toContain("pauses and resumes cannot be read right now");
    const none = await render(sandboxPageView({ sandboxId: "sbx-zz", live, events: [], samples: [] }, NOW));
    expect(none).not.toContain('id="lifecycle"');
  });

  it("says why the console's Resume did not resume it", async () => {
    const page = await render(sandboxNotResumedView("sbx-zz", "no idle sandbox in ns/p right now <b>"));
    expect(page).toContain("was not resumed");
    expect(page).toContain("no idle sandbox in ns/p right now &lt;b&gt;");
  });
});

describe("withPausedViews", () => {
  const pod = (name: string, leftover = false) =>
    ({
      metadata: {
        namespace: "ns",
        name,
        ...(leftover ? { annotations: { [STOP_REASON_ANNOTATION]: STOP_REASON.PAUSED } } : {}),
      },
    }) as V1Pod;
  const view = (id: string, podName: string, claimedAt: string, phase: SandboxView["phase"] = "running") =>
    ({ ...running, sandboxId: id, pod: podName, claimedAt, phase }) as SandboxView;

  it("lists pods newest claim first, then the paused sandboxes no pod runs, each sandbox once", () => {
    const a = view("sbx-a", "p-1", "2026-12-02T09:00:00Z");
    const b = view("sbx-b", "p-2", "2026-12-02T09:30:00Z");
    // sbx-c's resume claimed p-3: its pod is the sandbox, not its (Resuming) snapshot.
    const c = view("sbx-c", "p-3", "2026-12-02T09:40:00Z", "starting");
    // sbx-d's pause gave p-4 back; it still carries the id while it stops: the snapshot is the sandbox.
    const d = view("sbx-d", "p-4", "2026-12-02T09:10:00Z", "stopping");
    const pausedC = { ...paused, sandboxId: "sbx-c" };
    const pausedD = { ...paused, sandboxId: "sbx-d" };
    const pausedE = { ...paused, sandboxId: "sbx-e" };
    const shown = withPausedViews(
      [a, b, c, d],
      [pod("p-1"), pod("p-2"), pod("p-3"), pod("p-4", true)],
      [pausedC, pausedD, pausedE],
    );
    expect(shown.map((s) => `${s.sandboxId} ${s.phase}`)).toEqual([
      "sbx-c starting",
      "sbx-b running",
      "sbx-a running",
      "sbx-d paused",
      "sbx-e paused",
    ]);
  });

  it("keeps a pause's leftover pod when no snapshot shows its sandbox (the kill won)", () => {
    const d = view("sbx-d", "p-4", "2026-12-02T09:10:00Z", "stopping");
    expect(withPausedViews([d], [pod("p-4", true)], []).map((s) => s.sandboxId)).toEqual(["sbx-d"]);
  });
});
