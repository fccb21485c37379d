import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EnvEditRefused, editEnv } from "../../functions/envs/edit-env.ts";
import { readEnvOverview, readEnvTimeline } from "../../functions/envs/read-env.ts";
import { nodeKubeTransport } from "../../hosts/node/kube-transport.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { EnvEdit } from "../../lib/env/env-edit-request.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import type { JsonPatchOp } from "../../lib/kube/json-patch.ts";
import { runCli } from "./support/cli.ts";
import { createTemplateAndEnv, ENVS, eventsAbout, TEMPLATES, tickUntil } from "./support/envs.ts";
import { kube } from "./support/kube.ts";
import { poolTest } from "./support/steps.ts";

// Managing an Env without kubectl (issue #26, section 3): the functions the console and the CLI
// share edit the Env through the apiserver (admission checks each write; a concurrent change is
// re-planned once), and the CLI does the same with its kubeconfig's own rights.

const { kc, core, custom, cluster } = kube();
const t = poolTest("envmanage");
const { deps } = t;
const template = `envmanage-${randomBytes(3).toString("hex")}`;
const ENV = "py";

beforeAll(() =>
  createTemplateAndEnv(
    t.ns,
    template,
    ENV,
    [{ name: "a", spec: { replicas: 1 }, config: { scalingGroup: "g", minReplicas: 0, maxReplicas: 4 } }],
    { autoscaling: { groups: [{ name: "g", enabled: false, maxReplicas: 8 }] } },
  ),
);
afterAll(async () => {
  await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template }).catch(() => {});
});

const getEnv = async () =>
  (await custom.getNamespacedCustomObject({ ...ENVS, namespace: t.ns, name: ENV })) as SandboxEnv;
const members = async () => (await getEnv()).spec.clusters?.[0]?.members ?? [];
const edit = (e: EnvEdit, client = deps.kube) =>
  editEnv({ ...deps, kube: client }, "local", t.ns, ENV, e, "env-manage test");
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => (e instanceof EnvEditRefused ? e.rejection : Promise.reject(e)),
  );

/**
 * Racing is a client whose Env patches first let another writer change the Env's spec (the real
 * apiserver, as the autoscaler would): `times` patches lose their precondition.
 */
class Racing extends KubeClient {
  times: number;
  constructor(times: number) {
    super(nodeKubeTransport(kc));
    this.times = times;
  }
  override async patchEnv(namespace: string, name: string, ops: JsonPatchOp[]) {
    if (this.times-- > 0) {
      const env = await deps.kube.getEnv(namespace, name);
      const replicas = env.spec.clusters?.[0]?.members?.[0]?.spec?.replicas ?? 0;
      await deps.kube.patchEnv(namespace, name, [
        { op: "add", path: "/spec/clusters/0/members/0/spec/replicas", value: replicas + 1 },
      ]);
    }
    return super.patchEnv(namespace, name, ops);
  }
}

describe("editing an Env through the apiserver", () => {
  it("adds a member, which the Env's run makes a pool, and records who did it", async () => {
    const r = await edit({
      op: "add-member",
      member: "b",
      replicas: 1,
      config: { scalingGroup: "g", maxReplicas: 3 },
    });
    expect(r).toMatchObject({ changed: true, summary: expect.stringContaining('added member "b"') });
    expect((await members()).map((m) => [m.name, m.config?.maxReplicas])).toEqual([
      ["a", 4],
      ["b", 3],
    ]);
    await tickUntil(deps, t.ns, "member b's pool", async () =>
      (await readEnvOverview(deps, "local", t.ns, ENV))?.members.find((m) => m.name === "b" && m.pool),
    );
    const events = await eventsAbout(core, t.ns, ENV);
    expect(events).toContainEqual({
      type: "Normal",
      reason: "EnvEdited",
      message: expect.stringContaining('env-manage test: added member "b"'),
    });
    // The timeline has the edit and the Env run's MemberCreated for b, newest first.
    const timeline = await readEnvTimeline(deps, t.ns, ENV, ["a", "b"]);
    const reasons = timeline.map((e) => e.reason);
    expect(reasons).toContain("MemberCreated");
    expect(reasons.indexOf("MemberCreated")).toBeLessThan(reasons.indexOf("EnvEdited"));
    expect([...timeline.map((e) => e.time)]).toEqual([...timeline.map((e) => e.time)].sort().reverse());
  });

  it("answers admission's refusal with its message, naming the field and the member", async () => {
    const before = (await getEnv()).metadata?.generation;
    const r = await refusal(edit({ op: "set-member", member: "b", config: { minReplicas: 5 } }));
    expect(r).toMatchObject({
      status: 422,
      code: "Invalid",
      fields: [
        {
          path: 'spec.clusters[0].members[1].config.minReplicas (member "b")',
          message: expect.stringContaining("must not exceed config.maxReplicas"),
        },
      ],
    });
    expect(r?.message).toContain("SandboxEnv is invalid");
    expect((await getEnv()).metadata?.generation).toBe(before);
  });

  it("refuses an unknown member (404) and one it has (409), naming the field", async () => {
    await expect(refusal(edit({ op: "remove-member", member: "zz" }))).resolves.toMatchObject({
      status: 404,
      fields: [{ path: "member" }],
      message: expect.stringContaining("(members: a, b)"),
    });
    await expect(refusal(edit({ op: "add-member", member: "a" }))).resolves.toMatchObject({ status: 409 });
  });

  it("sets a group's bounds and policies, and says nothing changed when it already is so", async () => {
    const set: EnvEdit = {
      op: "set-group",
      group: "g",
      maxReplicas: 6,
      scaleUpPolicy: { cooldownSeconds: 5 },
      scaleDownPolicy: { stabilizationSeconds: 7 },
    };
    await expect(edit(set)).resolves.toMatchObject({ changed: true });
    const g = (await getEnv()).spec.autoscaling?.groups?.[0];
    expect([
      g?.maxReplicas,
      g?.scaleUpPolicy.cooldownSeconds,
      g?.scaleDownPolicy.stabilizationSeconds,
    ]).toEqual([6, 5, 7]);
    await expect(edit(set)).resolves.toMatchObject({ changed: false });
  });

  it("re-plans once when the Env's spec changed under it, and refuses with 409 when it changes again", async () => {
    const once = new Racing(1);
    await expect(
      edit({ op: "set-member", member: "b", config: { maxReplicas: 5 } }, once),
    ).resolves.toMatchObject({
      changed: true,
    });
    expect((await members()).find((m) => m.name === "b")?.config?.maxReplicas).toBe(5);
    const always = new Racing(2);
    await expect(
      refusal(edit({ op: "set-member", member: "b", config: { maxReplicas: 2 } }, always)),
    ).resolves.toMatchObject({ status: 409, message: expect.stringContaining("changed twice") });
    expect((await members()).find((m) => m.name === "b")?.config?.maxReplicas).toBe(5);
  });
});

describe("agentbox env", () => {
  const cli = (...args: string[]) =>
    runCli(["env", ...args, "--kubeconfig", cluster.kubeconfig, "--cluster-id", "local"]);

  it("lists, shows and edits an Env, and names a bad flag", async () => {
    const listed = await cli("list", "-n", t.ns);
    expect(listed.stdout).toMatch(new RegExp(`${t.ns}/${ENV}\\s+${template}`));
    const set = await cli(
      "set-member",
      `${t.ns}/${ENV}`,
      "a",
      "--max-replicas",
      "7",
      "--min-replicas",
      "none",
    );
    expect(set).toMatchObject({ code: 0, stdout: expect.stringContaining("config.maxReplicas 4→7") });
    const a = (await members()).find((m) => m.name === "a");
    expect([a?.config?.maxReplicas, a?.config?.minReplicas]).toEqual([7, undefined]);
    const shown = await cli("get", `${t.ns}/${ENV}`, "-o", "json");
    const overview = JSON.parse(shown.stdout) as {
      members: { name: string; config: { maxReplicas?: number } }[];
    };
    expect(overview.members.map((m) => [m.name, m.config.maxReplicas])).toEqual([
      ["a", 7],
      ["b", 5],
    ]);
    const events = await cli("events", `${t.ns}/${ENV}`);
    expect(events.stdout.split("\n")[1]).toContain("EnvEdited");
    const bad = await cli("set-member", `${t.ns}/${ENV}`, "a", "--max-replicas", "lots");
    expect(bad).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("--max-replicas: must be a whole number"),
    });
    const denied = await cli("set-group", `${t.ns}/${ENV}`, "g", "--min-replicas", "9");
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain(
      'spec.autoscaling.groups[0].minReplicas (group "g"): must not exceed maxReplicas',
    );
  }, 60_000);

  it("edits with the kubeconfig user's rights: a reader is refused with 403", async () => {
    const name = "env-reader";
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await core.createNamespacedServiceAccount({ namespace: t.ns, body: { metadata: { name } } });
    await rbac.createNamespacedRole({
      namespace: t.ns,
      body: {
        metadata: { name },
        rules: [
          {
            apiGroups: ["agents.navix.sh"],
            resources: ["sandboxenvs", "sandboxpools"],
            verbs: ["get", "list"],
          },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: t.ns,
      body: {
        metadata: { name },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
        subjects: [{ kind: "ServiceAccount", name, namespace: t.ns }],
      },
    });
    const token = await core.createNamespacedServiceAccountToken({
      name,
      namespace: t.ns,
      body: { spec: { audiences: [], expirationSeconds: 600 } },
    });
    const reader = new KubeConfig();
    reader.loadFromOptions({
      clusters: [{ name: "c", server: cluster.server, caFile: cluster.caCert }],
      users: [{ name: "reader", token: token.status?.token ?? "" }],
      contexts: [{ name: "r", cluster: "c", user: "reader" }],
      currentContext: "r",
    });
    const file = join(mkdtempSync(join(tmpdir(), "env-reader-")), "kubeconfig");
    writeFileSync(file, reader.exportConfig());
    const res = await runCli([
      "env",
      "set-member",
      `${t.ns}/${ENV}`,
      "a",
      "--max-replicas",
      "3",
      "--kubeconfig",
      file,
      "--cluster-id",
      "local",
    ]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("you may not change this SandboxEnv");
    expect(res.stderr).toContain("403 Forbidden");
    expect((await members()).find((m) => m.name === "a")?.config?.maxReplicas).toBe(7);
  }, 60_000);
});
