import { readdirSync } from "node:fs";
import { join } from "node:path";
import type {
  V1ClusterRole,
  V1DaemonSet,
  V1ValidatingAdmissionPolicy,
  V1ValidatingAdmissionPolicyBinding,
} from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { nodeKubeTransport } from "../../hosts/node/kube-transport.ts";
import { parseAgentFlags } from "../../hosts/snapshot-agent/flags.ts";
import { base, DEPLOY, one } from "./support/deploy-manifests.ts";
import { kube } from "./support/kube.ts";
import { kustomizationOf, kustomize, type Manifest } from "./support/kustomize.ts";

// infra/deploy/components/snapshots, the snapshot agent's DaemonSet (ADR 0045): it builds with the
// base as kustomize builds it, the real apiserver accepts every object of it (server-side apply,
// dryRun=All), and it grants and mounts only what the agent needs, held to its own node by an
// admission policy (what that policy lets through: snapshot-agent-policy.test.ts).

const COMPONENT = join(DEPLOY, "components/snapshots");
const build = () => kustomize(join(DEPLOY, "overlays/snapshots"));
const { kc, core } = kube();
const send = nodeKubeTransport(kc);
const PATHS: Record<string, string> = {
  ServiceAccount: "/api/v1/namespaces/agentbox-system/serviceaccounts",
  ConfigMap: "/api/v1/namespaces/agentbox-system/configmaps",
  ClusterRole: "/apis/rbac.authorization.k8s.io/v1/clusterroles",
  ClusterRoleBinding: "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
  DaemonSet: "/apis/apps/v1/namespaces/agentbox-system/daemonsets",
  ValidatingAdmissionPolicy: "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
  ValidatingAdmissionPolicyBinding: "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
};

/** added are the objects the component adds to the base. */
function added(): Manifest[] {
  const ids = new Set(base().map((o) => `${o.kind}/${o.metadata.name}`));
  return build().filter((o) => !ids.has(`${o.kind}/${o.metadata.name}`));
}

describe("infra/deploy/components/snapshots", () => {
  it("lists every manifest of its folder and adds only the agent's objects, and the host's read of nodes, to the base", () => {
    const files = readdirSync(COMPONENT).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml");
    expect([...(kustomizationOf(COMPONENT).resources ?? [])].sort()).toEqual(files.sort());
    expect(added().map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      "ServiceAccount/agentbox-snapshot-agent",
      "ClusterRole/agentbox-snapshot-agent",
      "ClusterRoleBinding/agentbox-snapshot-agent",
      "ClusterRole/agentbox-functions-snapshot-nodes",
      "ClusterRoleBinding/agentbox-functions-snapshot-nodes",
      "ValidatingAdmissionPolicy/agentbox-snapshot-agent-node",
      "ValidatingAdmissionPolicyBinding/agentbox-snapshot-agent-node",
      "ConfigMap/agentbox-snapshot-agent",
      "DaemonSet/agentbox-snapshot-agent",
    ]);
  });

  it("passes a server-side dry run of every object it adds against the real apiserver", async () => {
    await core.createNamespace({ body: { metadata: { name: "agentbox-system" } } }).catch(() => {});
    const refused = [];
    for (const o of added()) {
      const res = await send({
        method: "PATCH",
        path: `${PATHS[o.kind]}/${o.metadata.name}`,
        query: { dryRun: "All", fieldManager: "agentbox-deploy-test", force: "true" },
        contentType: "application/apply-patch+yaml",
        body: o,
      });
      if (res.status >= 300)
        refused.push(`${o.kind}/${o.metadata.name}: ${res.status} ${res.body.slice(0, 300)}`);
    }
    expect(refused).toEqual([]);
  });

  it("grants only sandboxsnapshots and their status, without create, patch or delete", () => {
    const role = one<V1ClusterRole>(build(), "ClusterRole", "agentbox-snapshot-agent");
    expect(role.rules?.map((r) => `${r.apiGroups?.join()}:${r.resources?.join()}:${r.verbs.join()}`)).toEqual(
      [
        "agents.navix.sh:sandboxsnapshots:get,list,watch,update",
        "agents.navix.sh:sandboxsnapshots/status:get,update",
      ],
    );
  });

  it("grants the host only the get of nodes (whether a snapshot's node is gone, and which can take it)", () => {
    const objects = build();
    const role = one<V1ClusterRole>(objects, "ClusterRole", "agentbox-functions-snapshot-nodes");
    expect(role.rules?.map((r) => `${r.apiGroups?.join()}:${r.resources?.join()}:${r.verbs.join()}`)).toEqual(
      [":nodes:get"],
    );
    const binding = one<{ roleRef?: { name?: string }; subjects?: unknown[] }>(
      objects,
      "ClusterRoleBinding",
      "agentbox-functions-snapshot-nodes",
    );
    expect(binding.roleRef?.name).toBe("agentbox-functions-snapshot-nodes");
    // The host's ServiceAccount, as the base's own binding names it.
    const host = one<{ subjects?: unknown[] }>(objects, "ClusterRoleBinding", "agentbox-functions");
    expect(binding.subjects).toEqual(host.subjects);
  });

  it("holds every agent to its own node's snapshots: the ServiceAccount the DaemonSet runs as, Fail, Deny", () => {
    const objects = build();
    const policy = one<V1ValidatingAdmissionPolicy>(
      objects,
      "ValidatingAdmissionPolicy",
      "agentbox-snapshot-agent-node",
    );
    const binding = one<V1ValidatingAdmissionPolicyBinding>(
      objects,
      "ValidatingAdmissionPolicyBinding",
      "agentbox-snapshot-agent-node",
    );
    expect(binding.spec).toEqual({ policyName: "agentbox-snapshot-agent-node", validationActions: ["Deny"] });
    expect(policy.spec?.failurePolicy).toBe("Fail");
    expect(policy.spec?.matchConstraints?.resourceRules).toEqual([
      {
        apiGroups: ["agents.navix.sh"],
        apiVersions: ["*"],
        operations: ["UPDATE"],
        resources: ["sandboxsnapshots", "sandboxsnapshots/status"],
      },
    ]);
    // The agent it matches is the one the DaemonSet runs as, wherever an overlay puts it, and
    // every grant of the agent's ClusterRole is to that ServiceAccount.
    const ds = one<V1DaemonSet>(objects, "DaemonSet", "agentbox-snapshot-agent");
    const sa = `system:serviceaccount:${ds.metadata?.namespace}:${ds.spec?.template.spec?.serviceAccountName}`;
    const matches = new RegExp(
      /matches\('([^']+)'\)/.exec(policy.spec?.matchConditions?.[0]?.expression ?? "")?.[1] ?? "^$",
    );
    expect(matches.test(sa)).toBe(true);
    expect(matches.test("system:serviceaccount:agentbox-system:agentbox-functions")).toBe(false);
    const bindings = objects.filter(
      (o) =>
        o.kind === "ClusterRoleBinding" &&
        (o as { roleRef?: { name?: string } }).roleRef?.name === "agentbox-snapshot-agent",
    ) as { subjects?: { kind: string; name: string; namespace?: string }[] }[];
    expect(bindings.flatMap((b) => b.subjects ?? [])).toEqual([
      { kind: "ServiceAccount", name: "agentbox-snapshot-agent", namespace: "agentbox-system" },
    ]);
  });

  it("runs on its own node's snapshots with containerd's socket alone, root with no capability", () => {
    const ds = one<V1DaemonSet>(build(), "DaemonSet", "agentbox-snapshot-agent");
    const pod = ds.spec?.template.spec;
    const c = pod?.containers[0];
    expect(pod?.containers).toHaveLength(1);
    expect(pod?.volumes?.filter((v) => v.hostPath).map((v) => v.hostPath)).toEqual([
      { path: "/run/containerd/containerd.sock", type: "Socket" },
    ]);
    expect(c?.securityContext).toMatchObject({
      runAsUser: 0,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(c?.env?.find((e) => e.name === "NODE_NAME")?.valueFrom?.fieldRef?.fieldPath).toBe("spec.nodeName");
    expect(c?.env?.find((e) => e.name === "AGENTBOX_REGISTRY_AUTH")?.valueFrom?.secretKeyRef?.name).toBe(
      "agentbox-snapshot-registry",
    );
    // Its arguments read as the program reads them (with the kubelet's $(VAR) filled in).
    const [main, ...args] = c?.args ?? [];
    expect(main).toBe("hosts/snapshot-agent/main.ts");
    const vars: Record<string, string> = {
      NODE_NAME: "node-a",
      REGISTRY_NAME: "r.example",
      REGISTRY_URL: "",
    };
    const parsed = parseAgentFlags(
      args.map((a) => a.replace(/\$\((\w+)\)/g, (_, v: string) => vars[v] ?? "")),
    );
    expect(parsed).toMatchObject({
      ok: true,
      value: { fieldSelector: "spec.source.node=node-a", registryName: "r.example", tmpDir: "/tmp" },
    });
  });
});
