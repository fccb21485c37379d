import { randomBytes } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POD_REVISION_LABEL } from "../../lib/crd/keys.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { runCli } from "./support/cli.ts";
import { ENVS, envObject, eventsAbout, TEMPLATES, templateObject, tickUntil } from "./support/envs.ts";
import { httpsRequest } from "./support/http.ts";
import { kube } from "./support/kube.ts";
import { isReady, phaseOf, poolTest } from "./support/steps.ts";

// Env members keep the template revision they were created from (seed 002: "Template upgrades do
// NOT auto-propagate into Spec"; ADR 0033) until RefreshMember, over HTTP and the CLI, moves one to
// the template's current revision; a member added after the edit is made from the current one.

const { core, custom, cluster } = kube();
const t = poolTest("envrev");
const { deps, pods } = t;
const template = `envrev-${randomBytes(3).toString("hex")}`;
const IMAGE = "registry.local/sandbox/python:3.12";

beforeAll(async () => {
  await custom.createClusterCustomObject({ ...TEMPLATES, body: templateObject(template, "v1", IMAGE) });
});
afterAll(async () => {
  await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template }).catch(() => {});
});

const getEnv = async () =>
  (await custom.getNamespacedCustomObject({ ...ENVS, namespace: t.ns, name: "rev" })) as SandboxEnv;
const consistency = async () =>
  (await getEnv()).status?.conditions?.find((c) => c.type === "TemplateConsistent");
const cpu = (p: SandboxPool) =>
  (p.spec.template?.spec as { containers: { resources: { requests: { cpu: string } } }[] } | undefined)
    ?.containers[0]?.resources.requests.cpu;
const member = (name: string) => ({ name, spec: { replicas: 1 }, config: { scalingGroup: "default" } });
/** settled: the pool's pods are `n`, idle, Ready and all of one pod revision, which it returns. */
const settled = (ps: V1Pod[], n: number) => {
  const revisions = new Set(ps.map((p) => p.metadata?.labels?.[POD_REVISION_LABEL]));
  const [revision] = revisions;
  return ps.length === n && revisions.size === 1 && ps.every((p) => phaseOf(p) === "idle" && isReady(p))
    ? revision
    : undefined;
};
const refresh = (query: string) =>
  httpsRequest(`https://127.0.0.1:${cluster.hostPort}/functions/refresh-member?${query}`, cluster.caCert, {
    method: "POST",
    headers: { authorization: `Bearer ${cluster.functionsToken}` },
  });

/** refreshCli refreshes a member of the Env "rev" with the CLI, as an operator would. */
const refreshCli = (memberName: string) =>
  runCli([
    "refresh-member",
    `${t.ns}/rev`,
    memberName,
    ...["--cluster-id", "local", "--kubeconfig", cluster.kubeconfig, "--history", ":memory:"],
  ]);

describe("Env member template revisions", () => {
  it("a template edit leaves a member as it is until refresh-member; new members take the edit", async () => {
    await custom.createNamespacedCustomObject({
      ...ENVS,
      namespace: t.ns,
      body: envObject(t.ns, "rev", template, [member("rev-a")]),
    });
    const before = await tickUntil(deps, t.ns, "rev-a's pod Ready", async () =>
      settled(await pods("rev-a"), 1),
    );
    const created = await t.getPool("rev-a");
    expect(cpu(created)).toBe("250m");

    // The template's pod spec changes (a new revision that would roll pods) and its label too.
    const current = (await custom.getClusterCustomObject({ ...TEMPLATES, name: template })) as {
      metadata: { resourceVersion: string };
    };
    const edited = templateObject(template, "v2", IMAGE);
    const containers = edited.spec.template.spec.containers;
    for (const c of containers) c.resources.requests.cpu = "500m";
    await custom.replaceClusterCustomObject({
      ...TEMPLATES,
      name: template,
      body: {
        ...edited,
        metadata: {
          ...edited.metadata,
          labels: { "sample.agentbox.dev/tier": "platinum" },
          resourceVersion: current.metadata.resourceVersion,
        },
      },
    });

    // The Env's runs see the edit (the status says the member is behind) and leave the pool alone.
    const behind = await tickUntil(deps, t.ns, "TemplateConsistent says rev-a is behind", async () => {
      const c = await consistency();
      return c?.reason === "MembersBehindTemplate" ? c : undefined;
    });
    expect(behind).toMatchObject({ status: "False" });
    expect(behind.message).toMatch(
      /rev-a renders revision \w{10} \(version "v1"\); SandboxTemplate ".+" is at revision \w{10} \(version "v2"\)/,
    );
    const kept = await t.getPool("rev-a");
    expect(kept.metadata?.generation).toBe(created.metadata?.generation);
    expect(kept.spec).toEqual(created.spec);
    expect(kept.metadata?.labels?.["sample.agentbox.dev/tier"]).toBe("gold");
    expect(kept.metadata?.annotations?.["agentbox.navix.sh/template-version"]).toBe("v1");
    expect(settled(await pods("rev-a"), 1)).toBe(before);

    // A member added after the edit is made from the template as it is now.
    await custom.patchNamespacedCustomObject({
      ...ENVS,
      namespace: t.ns,
      name: "rev",
      body: [{ op: "add", path: "/spec/clusters/0/members/-", value: member("rev-b") }],
    });
    await tickUntil(deps, t.ns, "rev-b's pod Ready", async () => settled(await pods("rev-b"), 1));
    const added = await t.getPool("rev-b");
    expect(cpu(added)).toBe("500m");
    expect(added.metadata?.labels?.["sample.agentbox.dev/tier"]).toBe("platinum");
    expect(cpu(await t.getPool("rev-a"))).toBe("250m");

    // Refreshed over HTTP (the host's reconciler thread): the new spec, an Event, then a rollout.
    const res = await refresh(`namespace=${t.ns}&env=rev&member=rev-a`);
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body.toString()) as { report: { outcomes: { result: string }[] } };
    expect(body.report.outcomes.map((o) => o.result)).toEqual(["done"]);
    const refreshed = await t.getPool("rev-a");
    expect(cpu(refreshed)).toBe("500m");
    expect(refreshed.spec.replicas).toBe(1);
    expect(refreshed.metadata?.labels?.["sample.agentbox.dev/tier"]).toBe("platinum");
    expect(refreshed.metadata?.annotations?.["agentbox.navix.sh/member-template"]).toBe(
      added.metadata?.annotations?.["agentbox.navix.sh/member-template"],
    );
    expect(await eventsAbout(core, t.ns, "rev-a")).toContainEqual(
      expect.objectContaining({ type: "Normal", reason: "MemberRefreshed" }),
    );

    // A second refresh (the CLI) writes nothing.
    const again = await refreshCli("rev-a");
    expect(again.stderr).toBe("");
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      /member rev-a: nothing to do, already at SandboxTemplate ".+" revision \w{10} \(version "v2"\)/,
    );
    expect((await t.getPool("rev-a")).metadata?.resourceVersion).toBe(refreshed.metadata?.resourceVersion);

    // The pool's pods roll to the new revision, and the Env is consistent with its template again.
    const rolled = await tickUntil(deps, t.ns, "rev-a rolled and the Env consistent", async () => {
      const revision = settled(await pods("rev-a"), 1);
      return revision && revision !== before && (await consistency())?.status === "True"
        ? revision
        : undefined;
    });
    expect(rolled).toBe(settled(await pods("rev-b"), 1));
  });

  it("answers an unknown Env or member with 404, a snapshot member or a missing template with 409", async () => {
    expect((await refresh(`namespace=${t.ns}&env=nope&member=rev-a`)).status).toBe(404);
    const unknown = await refresh(`namespace=${t.ns}&env=rev&member=nope`);
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body.toString()).error.message).toBe(
      `SandboxEnv "${t.ns}/rev" has no member "nope" in cluster segment "local"`,
    );
    const missing = await refresh(`namespace=${t.ns}&env=rev`);
    expect(missing.status).toBe(400);
    expect(JSON.parse(missing.body.toString()).error.fields.map((f: { path: string }) => f.path)).toEqual([
      "member",
    ]);

    const snapshot = {
      name: "rev-snap",
      spec: { replicas: 0, template: { spec: { containers: [{ name: "sandbox", image: IMAGE }] } } },
    };
    await custom.patchNamespacedCustomObject({
      ...ENVS,
      namespace: t.ns,
      name: "rev",
      body: [{ op: "add", path: "/spec/clusters/0/members/-", value: snapshot }],
    });
    const refused = await refresh(`namespace=${t.ns}&env=rev&member=rev-snap`);
    expect(refused.status).toBe(409);
    expect(JSON.parse(refused.body.toString()).error.message).toMatch(/^member "rev-snap" is snapshot-based/);

    await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template });
    const gone = await refresh(`namespace=${t.ns}&env=rev&member=rev-a`);
    expect(gone.status).toBe(409);
    expect(JSON.parse(gone.body.toString()).error.message).toBe(
      `SandboxTemplate "${template}" does not exist`,
    );
    const cli = await refreshCli("rev-a");
    expect(cli.code).toBe(1);
    expect(cli.stderr).toBe(`refused: SandboxTemplate "${template}" does not exist\n`);
  });
});
