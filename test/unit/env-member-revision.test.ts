import { describe, expect, it } from "vitest";
import { MEMBER_TEMPLATE_ANNOTATION, POOL_TEMPLATE_VERSION_ANNOTATION } from "../../lib/crd/keys.ts";
import type { EnvClusterMember, SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import { RECORD_ANNOTATIONS, revisionHash, revisionOf } from "../../lib/env/member-revision.ts";
import { type EnvSnapshot, planEnv } from "../../lib/env/plan-env.ts";
import { planMemberRefresh } from "../../lib/env/refresh-member.ts";
import type { Action } from "../../lib/kube/action.ts";
import { canonicalJson } from "../../lib/util/canonical-json.ts";
import { envWithMembers as env } from "../support/env-member.ts";

// Env members render from the template revision their pool records (seed 002: "Template upgrades
// do NOT auto-propagate into Spec"; ADR 0033), on plain data: what a template edit does (nothing to
// existing members, new members take it), what an upgrade does to a pool made before members
// recorded revisions (nothing), and what RefreshMember plans.

const NOW = new Date("2026-11-26T12:00:00Z");

const pod = (image: string, cpu = "1") => ({
  spec: { containers: [{ name: "main", image, resources: { requests: { cpu } } }] },
});

const V1: SandboxTemplate = {
  metadata: { name: "python", labels: { tier: "gold" }, annotations: { note: "one" } },
  spec: { version: "v1", template: pod("py:1"), idleImage: "idle:1" },
};
/** V2 is V1 edited: a new pod spec (cpu), image, label and annotation. */
const V2: SandboxTemplate = {
  metadata: { name: "python", labels: { tier: "platinum" }, annotations: { note: "two" } },
  spec: { version: "v2", template: pod("py:2", "2"), idleImage: "idle:2" },
};

const member = (name: string, extra: Partial<EnvClusterMember> = {}): EnvClusterMember => ({
  name,
  spec: { replicas: 2 } as EnvClusterMember["spec"],
  config: { scalingGroup: "default", labels: { team: "ml" } },
  ...extra,
});

/** createdPool is the pool an Env run created for a member while the template was `from`. */
function createdPool(e: SandboxEnv, m: EnvClusterMember, from: SandboxTemplate): SandboxPool {
  const created = planEnv(snap(e, [], from), "local", NOW).find((a) => a.write.op === "create");
  if (created?.write.op !== "create") throw new Error("no create planned");
  const object = structuredClone(created.write.object) as SandboxPool;
  object.metadata = { ...object.metadata, uid: `${m.name}-uid`, resourceVersion: "11", generation: 1 };
  return object;
}

const snap = (e: SandboxEnv, pools: SandboxPool[], template: SandboxTemplate | null): EnvSnapshot => ({
  env: e,
  pools,
  template,
  pullSecret: false,
  pods: [],
});

const poolWrites = (actions: Action[]) => actions.filter((a) => a.target.kind === "SandboxPool");

function templateConsistent(actions: Action[]) {
  const write = actions.find((a) => a.write.op === "patch-status")?.write;
  const status =
    write?.op === "patch-status" ? (write.patch[1] as { value: SandboxEnv["status"] }).value : {};
  return status?.conditions?.find((c) => c.type === "TemplateConsistent");
}

/** RECORD_PATH is the JSON Pointer of the revision record's annotation. */
const RECORD_PATH = `/metadata/annotations/${MEMBER_TEMPLATE_ANNOTATION.replace("/", "~1")}`;

/** patchOps are the ops of the one pool patch planned (none when there is none). */
function patchOps(actions: Action[]) {
  const [patch, ...rest] = poolWrites(actions);
  expect(rest).toEqual([]);
  return patch?.write.op === "patch" ? patch.write.patch : [];
}

/** written maps each path a patch sets (add or replace) to its value. */
function written(ops: readonly { op: string; path: string; value?: unknown }[]): Record<string, unknown> {
  return Object.fromEntries(
    ops.filter((o) => o.op === "add" || o.op === "replace").map((o) => [o.path, o.value]),
  );
}

/** legacy is a member pool as a host before this change left it: rendered live, no revision record. */
function legacy(p: SandboxPool): SandboxPool {
  const out = structuredClone(p);
  for (const key of RECORD_ANNOTATIONS) delete out.metadata?.annotations?.[key];
  return out;
}

describe("a member renders from the revision its pool records", () => {
  const e = env([member("a")]);
  const a = createdPool(e, member("a"), V1);

  it("records the revision it was created from: a copy of what it took from the template", () => {
    const annotations = a.metadata?.annotations ?? {};
    expect(annotations[MEMBER_TEMPLATE_ANNOTATION]).toBe(canonicalJson(revisionOf(V1)));
    expect(JSON.parse(annotations[MEMBER_TEMPLATE_ANNOTATION] ?? "")).toEqual({
      name: "python",
      version: "v1",
      labels: { tier: "gold" },
      annotations: { note: "one" },
      template: pod("py:1"),
      idleImage: "idle:1",
    });
    expect(revisionHash(revisionOf(V1))).toMatch(/^[0-9a-f]{10}$/);
    expect(revisionHash(revisionOf(V1))).not.toBe(revisionHash(revisionOf(V2)));
  });

  it("leaves an existing member as it is after a template edit, and says it is behind", () => {
    const actions = planEnv(snap(e, [a], V2), "local", NOW);
    expect(poolWrites(actions)).toEqual([]);
    expect(templateConsistent(actions)).toMatchObject({
      status: "False",
      reason: "MembersBehindTemplate",
      message: expect.stringMatching(
        /a renders revision \w{10} \(version "v1"\); SandboxTemplate "python" is at revision \w{10} \(version "v2"\)/,
      ),
    });
  });

  it("renders a new member from the template as it is now", () => {
    const both = env([member("a"), member("b")]);
    const actions = planEnv(snap(both, [a], V2), "local", NOW);
    const [create, ...rest] = poolWrites(actions);
    expect(rest).toEqual([]);
    expect(create?.write.op === "create" && create.write.object).toMatchObject({
      metadata: { name: "b", labels: { tier: "platinum" }, annotations: { note: "two" } },
      spec: { template: pod("py:2", "2"), idleImage: "idle:2" },
    });
  });

  it("still takes the Env's own changes (overrides, config) on top of the recorded revision", () => {
    const changed = env([member("a", { config: { scalingGroup: "default", labels: { team: "ai" } } })], {
      overrides: { image: "py:mine" },
    });
    const ops = patchOps(planEnv(snap(changed, [a], V2), "local", NOW));
    expect(written(ops)).toEqual({
      "/spec/template": { spec: { containers: [{ ...pod("py:1").spec.containers[0], image: "py:mine" }] } },
      "/metadata/labels/team": "ai",
    });
  });

  it("follows the Env onto another template it names (the Env's own change)", () => {
    const other: SandboxTemplate = { ...V2, metadata: { ...V2.metadata, name: "python-next" } };
    const switched = env([member("a")], { templateRef: { name: "python-next" } });
    const [patch] = poolWrites(planEnv(snap(switched, [a], other), "local", NOW));
    expect(patch?.write.op === "patch" && patch.write.patch).toEqual(
      expect.arrayContaining([{ op: "add", path: "/spec/template", value: pod("py:2", "2") }]),
    );
  });
});

describe("a member pool made before members recorded a revision", () => {
  const e = env([member("a")]);
  const old = legacy(createdPool(e, member("a"), V1));

  it("records the template's revision, changing nothing else, when it renders as the pool is", () => {
    const ops = patchOps(planEnv(snap(e, [old], V1), "local", NOW));
    expect(ops.filter((o) => o.op !== "test").map((o) => o.path)).toEqual([RECORD_PATH]);
    expect(ops[0]).toMatchObject({ op: "test", path: "/metadata/uid" }); // on the spec it was read with
    expect(ops.at(-1)).toMatchObject({ value: canonicalJson(revisionOf(V1)) });
  });

  it("keeps what it has when the template changed before the upgrade, and is behind", () => {
    const actions = planEnv(snap(e, [old], V2), "local", NOW);
    const ops = patchOps(actions);
    expect(ops.filter((o) => o.op !== "test").map((o) => o.path)).toEqual([RECORD_PATH]);
    expect(templateConsistent(actions)).toMatchObject({ status: "False", reason: "MembersBehindTemplate" });
    // Once recorded, the next run writes nothing to the pool.
    const recorded = structuredClone(old);
    const copy = (ops.at(-1) as { value: string }).value;
    recorded.metadata = {
      ...recorded.metadata,
      annotations: { ...recorded.metadata?.annotations, [MEMBER_TEMPLATE_ANNOTATION]: copy },
    };
    expect(poolWrites(planEnv(snap(e, [recorded], V2), "local", NOW))).toEqual([]);
    expect(JSON.parse(copy)).toMatchObject({
      version: "v1",
      labels: { tier: "gold" },
      template: pod("py:1"),
    });
  });

  it("is rendered from what it carries when its record is garbled", () => {
    const garbled = structuredClone(old);
    if (garbled.metadata?.annotations) garbled.metadata.annotations[MEMBER_TEMPLATE_ANNOTATION] = "{not json";
    const ops = patchOps(planEnv(snap(e, [garbled], V2), "local", NOW));
    expect(ops.filter((o) => o.op !== "test").map((o) => o.path)).toEqual([RECORD_PATH]);
  });
});

describe("planMemberRefresh", () => {
  const e = env([
    member("a"),
    member("snap", { spec: { replicas: 1, template: pod("own:1") } as never }),
    member("new"),
  ]);
  const a = createdPool(env([member("a")]), member("a"), V1);

  it("re-renders the member from the template's current revision, tested on the pool's version, replicas aside", () => {
    const scaled = { ...a, spec: { ...a.spec, replicas: 5 } };
    const plan = planMemberRefresh(snap(e, [scaled], V2), "a", "local");
    expect(plan.ok).toBe(true);
    const [action, ...rest] = plan.ok ? plan.actions : [];
    expect(rest).toEqual([]);
    const ops = action?.write.op === "patch" ? action.write.patch : [];
    expect(ops[0]).toEqual({ op: "test", path: "/metadata/resourceVersion", value: "11" });
    expect(written(ops)).toMatchObject({
      "/spec/template": pod("py:2", "2"),
      "/spec/idleImage": "idle:2",
      "/metadata/labels/tier": "platinum",
      "/metadata/annotations/note": "two",
      "/metadata/annotations/agentbox.navix.sh~1template-version": "v2",
      [RECORD_PATH]: canonicalJson(revisionOf(V2)),
    });
    expect(ops.some((o) => o.path === "/spec/replicas")).toBe(false);
    expect(action?.event).toMatchObject({ type: "Normal", reason: "MemberRefreshed" });
  });

  it("writes nothing to a member already at the current revision (a second refresh)", () => {
    const refreshed = createdPool(env([member("a")]), member("a"), V2);
    const plan = planMemberRefresh(snap(e, [refreshed], V2), "a", "local");
    expect(plan).toMatchObject({
      ok: true,
      actions: [],
      note: expect.stringMatching(/^already at SandboxTemplate "python" revision/),
    });
    // and the Env's runs keep it there, no longer behind.
    const actions = planEnv(snap(env([member("a")]), [refreshed], V2), "local", NOW);
    expect(poolWrites(actions)).toEqual([]);
    expect(templateConsistent(actions)).toMatchObject({ status: "True" });
    expect(refreshed.metadata?.annotations?.[POOL_TEMPLATE_VERSION_ANNOTATION]).toBe("v2");
  });

  it("refuses a snapshot member and a missing or unpinned template, and does not know an unknown member", () => {
    expect(planMemberRefresh(snap(e, [a], V2), "snap", "local")).toMatchObject({
      ok: false,
      missing: false,
      reason: expect.stringMatching(/^member "snap" is snapshot-based/),
    });
    expect(planMemberRefresh(snap(e, [a], null), "a", "local")).toEqual({
      ok: false,
      missing: false,
      reason: 'SandboxTemplate "python" does not exist',
    });
    const pinned = env([member("a")], { templateRef: { name: "python", version: "v1" } });
    expect(planMemberRefresh(snap(pinned, [a], V2), "a", "local")).toMatchObject({
      ok: false,
      reason: 'SandboxTemplate "python" is at version "v2", the Env pins "v1"',
    });
    expect(planMemberRefresh(snap(e, [a], V2), "nope", "local")).toMatchObject({ ok: false, missing: true });
    expect(planMemberRefresh(snap(e, [a], V2), "a", "elsewhere")).toMatchObject({ ok: false, missing: true });
  });

  it("has nothing to do for a member without a pool yet, and refuses a pool the Env does not own", () => {
    expect(planMemberRefresh(snap(e, [a], V2), "new", "local")).toMatchObject({ ok: true, actions: [] });
    const foreign = { ...a, metadata: { ...a.metadata, ownerReferences: [] } };
    expect(planMemberRefresh(snap(e, [foreign], V2), "a", "local")).toMatchObject({
      ok: false,
      missing: false,
    });
  });
});
