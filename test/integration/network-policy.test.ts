import { randomBytes } from "node:crypto";
import type { CoreV1Api, V1LabelSelector, V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeKubeTransport } from "../../hosts/node/kube-transport.ts";
import { EGRESS_CUSTOM, EGRESS_LABEL, SANDBOX_POOL_LABEL } from "../../lib/crd/keys.ts";
import { INTERNAL_RANGES } from "../../lib/egress/policy.ts";
import { base, hostContainer, one } from "./support/deploy-manifests.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { kustomize } from "./support/kustomize.ts";
import { type Obj, Samples } from "./support/samples.ts";
import { isReady, phaseOf, reconcileUntil, testDeps } from "./support/steps.ts";

// Issue #35, point 5: the NetworkPolicies infra/deploy ships for sandbox namespaces, applied to the
// real apiserver in a namespace holding a pool made from the samples. The fence's pod selector
// must pick exactly the pods the pool creates (and nothing else there), its ingress peer the
// host's pods as the base Deployment labels them, in its namespace; the internet rule (issue #38:
// a policy of its own) must leave out the addresses of the pods and of the apiserver's Service,
// select only the pool's pods without the egress label (a sandbox with rules of its own has its
// own policy, lib/egress), and except exactly what those sandbox policies except. The samples'
// pods mount no token.

const SANDBOX_NAMESPACE = "infra/deploy/sandbox-namespace";
const { kc, core, custom } = kube();
const send = nodeKubeTransport(kc);

/**
 * NetworkPolicy as the apiserver stores it, read as plain JSON: the client's typed models rename
 * `from` to `_from` and would drop the peer of an object they did not build.
 */
interface NetworkPolicy {
  spec: {
    podSelector: V1LabelSelector;
    policyTypes?: string[];
    ingress?: { from?: Peer[]; ports?: unknown[] }[];
    egress?: { to?: Peer[]; ports?: { protocol?: string; port?: number }[] }[];
  };
}
interface Peer {
  podSelector?: V1LabelSelector;
  namespaceSelector?: V1LabelSelector;
  ipBlock?: { cidr: string; except?: string[] };
}
const deps = testDeps();

/** selectorString is a LabelSelector as the `labelSelector` query parameter spells it. */
function selectorString(s: V1LabelSelector | undefined): string {
  const labels = Object.entries(s?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  const expressions = (s?.matchExpressions ?? []).map((e) => {
    if (e.operator === "Exists") return e.key;
    if (e.operator === "DoesNotExist") return `!${e.key}`;
    return `${e.key} ${e.operator.toLowerCase()} (${(e.values ?? []).join(",")})`;
  });
  return [...labels, ...expressions].join(",");
}

/** ipv4Within says whether an IPv4 address lies in a CIDR block. */
function ipv4Within(ip: string, cidr: string): boolean {
  const toInt = (a: string) => a.split(".").reduce((n, o) => n * 256 + Number(o), 0);
  const [net = "", bits = "32"] = cidr.split("/");
  const size = 2 ** (32 - Number(bits));
  return Math.floor(toInt(ip) / size) === Math.floor(toInt(net) / size);
}

const names = (pods: V1Pod[]) => pods.map((p) => p.metadata?.name ?? "").sort();

/** podNamed makes a pod of a trivial container, labelled as given. */
async function podNamed(api: CoreV1Api, namespace: string, name: string, labels: Record<string, string>) {
  await api.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, labels },
      spec: { containers: [{ name: "main", image: "registry.local/bystander:1" }] },
    },
  });
}

let ns = "";
let cleanup: () => Promise<void> = async () => {};
let samples: Samples;
let policy: NetworkPolicy;
let internetPolicy: NetworkPolicy;

beforeAll(async () => {
  ({ ns, cleanup } = await newNamespace(core, "fenced"));
  const built = kustomize(SANDBOX_NAMESPACE);
  expect(built.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
    "NetworkPolicy/agentbox-sandboxes",
    "NetworkPolicy/agentbox-sandboxes-internet",
  ]);
  const applied: NetworkPolicy[] = [];
  for (const object of built) {
    // They name no namespace, so they go wherever they are applied (kubectl apply -n <ns>).
    expect(object.metadata.namespace).toBeUndefined();
    const created = await send({
      method: "POST",
      path: `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`,
      body: object,
    });
    expect(created.status, created.body).toBe(201);
    applied.push(JSON.parse(created.body) as NetworkPolicy);
  }
  [policy, internetPolicy] = applied as [NetworkPolicy, NetworkPolicy];
  samples = new Samples(custom, ns);
  const byKind = samples.byKind();
  await samples.create(byKind.SandboxTemplate as Obj);
  await samples.create(byKind.SandboxPool as Obj);
});

afterAll(async () => {
  await samples?.cleanup();
  await cleanup();
  deps.history.close();
});

describe("the sandbox namespace's NetworkPolicy", () => {
  it("selects exactly the pods the sample pool creates, which mount no service account token", async () => {
    const pool = (samples.byKind().SandboxPool as Obj).metadata?.name ?? "";
    const replicas = Number((samples.byKind().SandboxPool as Obj).spec?.replicas);
    const poolPods = await reconcileUntil(deps, ns, pool, `${replicas} idle pods`, async () => {
      const pods = (
        await core.listNamespacedPod({ namespace: ns, labelSelector: `${SANDBOX_POOL_LABEL}=${pool}` })
      ).items;
      return pods.length === replicas && pods.every((p) => phaseOf(p) === "idle" && isReady(p)) && pods;
    });
    // Another pod in the namespace, not the pool's: the policy must leave it alone.
    await podNamed(core, ns, "bystander", { app: "bystander" });
    const all = (await core.listNamespacedPod({ namespace: ns })).items;
    const owned = all.filter((p) => p.metadata?.ownerReferences?.some((o) => o.kind === "SandboxPool"));
    expect(names(owned)).toEqual(names(poolPods));
    const selected = (
      await core.listNamespacedPod({ namespace: ns, labelSelector: selectorString(policy.spec.podSelector) })
    ).items;
    expect(names(selected)).toEqual(names(owned));
    expect(names(all)).toContain("bystander");
    expect(policy.spec.policyTypes).toEqual(["Ingress", "Egress"]);
    for (const p of poolPods) expect(p.spec?.automountServiceAccountToken, p.metadata?.name).toBe(false);
  });

  it("lets in only the host's pods: the base Deployment's labels, in its namespace", async () => {
    const { deployment, labels } = hostContainer(base());
    const hostNs = deployment.metadata?.namespace ?? "";
    const namespaceManifest = one<{ metadata: { name: string; labels?: Record<string, string> } }>(
      base(),
      "Namespace",
      hostNs,
    );
    await core.createNamespace({ body: namespaceManifest }).catch(() => {});
    const [rule, ...more] = policy.spec.ingress ?? [];
    expect(more).toEqual([]);
    const [peer, ...others] = rule?.from ?? [];
    expect(others).toEqual([]);
    expect(rule?.ports).toBeUndefined(); // every port: the router forwards to any
    const selectedNs = (await core.listNamespace({ labelSelector: selectorString(peer?.namespaceSelector) }))
      .items;
    expect(selectedNs.map((n) => n.metadata?.name)).toEqual([hostNs]);
    // A pod as the Deployment makes them is selected; one missing its labels is not.
    const host = `host-${randomBytes(3).toString("hex")}`;
    const stranger = `stranger-${randomBytes(3).toString("hex")}`;
    await podNamed(core, hostNs, host, labels);
    await podNamed(core, hostNs, stranger, { app: "stranger" });
    try {
      const selected = (
        await core.listNamespacedPod({ namespace: hostNs, labelSelector: selectorString(peer?.podSelector) })
      ).items.map((p) => p.metadata?.name);
      expect(selected).toContain(host);
      expect(selected).not.toContain(stranger);
    } finally {
      for (const name of [host, stranger])
        await core.deleteNamespacedPod({ name, namespace: hostNs, gracePeriodSeconds: 0 }).catch(() => {});
    }
  });

  it("lets out only DNS and the internet: never to a pod or the apiserver's Service", async () => {
    const [dns, ...more] = policy.spec.egress ?? [];
    expect(more).toEqual([]);
    const [internet, ...others] = internetPolicy.spec.egress ?? [];
    expect(others).toEqual([]);
    expect(internetPolicy.spec.policyTypes).toEqual(["Egress"]);
    expect(internetPolicy.spec.ingress).toBeUndefined();
    expect(dns?.ports?.map((p) => `${p.protocol}/${p.port}`)).toEqual(["UDP/53", "TCP/53"]);
    const dnsNs = await core.listNamespace({
      labelSelector: selectorString(dns?.to?.[0]?.namespaceSelector),
    });
    expect(dnsNs.items.map((n) => n.metadata?.name)).toEqual(["kube-system"]);
    const blocks = (internet?.to ?? []).map((t) => t.ipBlock);
    const v4 = blocks.find((b) => b?.cidr === "0.0.0.0/0");
    expect(internet?.ports).toBeUndefined();
    expect(v4?.except).toEqual(
      expect.arrayContaining(["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"]),
    );
    expect(blocks.find((b) => b?.cidr === "::/0")?.except).toEqual(
      expect.arrayContaining(["fc00::/7", "fe80::/10"]),
    );
    const apiserver = await core.readNamespacedService({ name: "kubernetes", namespace: "default" });
    const pods = await until("pod IPs", 30_000, async () => {
      const items = (await core.listNamespacedPod({ namespace: ns })).items;
      return items.every((p) => p.status?.podIP) && items;
    });
    const addresses = [apiserver.spec?.clusterIP ?? "", ...pods.map((p) => p.status?.podIP ?? "")];
    // The cloud's metadata endpoint, too.
    for (const ip of [...addresses, "169.254.169.254"])
      expect(
        v4?.except?.some((c) => ipv4Within(ip, c)),
        ip,
      ).toBe(true);
  });

  it("grants the internet only to the pool's pods without the egress label, excepting what sandbox policies except", async () => {
    const pool = (samples.byKind().SandboxPool as Obj).metadata?.name ?? "";
    const poolPods = (
      await core.listNamespacedPod({ namespace: ns, labelSelector: `${SANDBOX_POOL_LABEL}=${pool}` })
    ).items;
    expect(poolPods.length).toBeGreaterThan(1);
    const [fencedPod] = poolPods;
    const fencedName = fencedPod?.metadata?.name ?? "";
    // A sandbox with rules of its own carries the egress label (set by its claim).
    await core.patchNamespacedPod({
      name: fencedName,
      namespace: ns,
      body: [
        { op: "add", path: `/metadata/labels/${EGRESS_LABEL.replace("/", "~1")}`, value: EGRESS_CUSTOM },
      ],
    });
    const selected = names(
      (
        await core.listNamespacedPod({
          namespace: ns,
          labelSelector: selectorString(internetPolicy.spec.podSelector),
        })
      ).items,
    );
    expect(selected).toEqual(names(poolPods).filter((n) => n !== fencedName));
    // The fence (ingress from the host, DNS) still selects it: policies add up.
    const fence = names(
      (
        await core.listNamespacedPod({
          namespace: ns,
          labelSelector: selectorString(policy.spec.podSelector),
        })
      ).items,
    );
    expect(fence).toContain(fencedName);
    const excepted = (internetPolicy.spec.egress?.[0]?.to ?? []).flatMap((t) => t.ipBlock?.except ?? []);
    expect([...excepted].sort()).toEqual([...INTERNAL_RANGES].sort());
  });
});
