import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { type KubeAccess, kubeconfigAccess, nodeKubeTransport } from "../../hosts/node/kube-transport.ts";
import { apply } from "../../infra/cluster/install.ts";
import {
  AGENT_POLICY,
  SNAPSHOT_AGENT_GROUP,
  snapshotAgentKubeconfig,
  snapshotAgentUser,
} from "../../infra/cluster/real-node/snapshot-agent.ts";
import {
  type SandboxSnapshot,
  type SandboxSnapshotStatus,
  SNAPSHOT_FINALIZER,
  SNAPSHOT_PHASE,
} from "../../lib/crd/sandbox-snapshot.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { KubeError, orMissing } from "../../lib/kube/errors.ts";
import { withoutFinalizer } from "../../lib/snapshots/agent-work.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { realNode } from "./support/real-node.ts";
import { namespacedToken } from "./support/scoped-token.ts";
import { AGENT_TEST_NODES, agentTestSnapshot } from "./support/snapshot-agent-nodes.ts";

// The snapshot agent's admission policy (infra/deploy/components/snapshots/admission-policy.yaml,
// ADR 0045) against the real apiserver, as `cluster up` applies it beside the real node's agent:
// an agent writes only the SandboxSnapshots of its own node, and of the object itself only the
// removal of its finalizer from a deleted one. Its node comes from its identity: the pod its
// ServiceAccount token is bound to (the DaemonSet), or its user name (the local real node's static
// token). The hosts' writes are not its business.

const { core, kc, cluster } = kube();
const admin = new KubeClient(nodeKubeTransport(kc));
/** NODE is the node of the agent identities made here; OTHER is another node (no agent watches either). */
const NODE = AGENT_TEST_NODES.policy;
const OTHER = AGENT_TEST_NODES.other;
const POLICY = "agentbox-snapshot-agent-node";
/** The DaemonSet's ServiceAccount (infra/deploy/components/snapshots/rbac.yaml). */
const SA = { namespace: "agentbox-system", name: "agentbox-snapshot-agent" };
const newId = () => `sb${randomBytes(5).toString("hex")}`;
let ns = "";
let cleanup = async () => {};

/** withHeaders is the admin's access with extra request headers (impersonation). */
function withHeaders(headers: Record<string, string | string[]>): KubeAccess {
  const base = kubeconfigAccess(kc);
  return {
    server: base.server,
    apply: async (options) => {
      await base.apply(options);
      options.headers = { ...(options.headers as Record<string, string>), ...headers };
    },
  };
}

/** withToken is the apiserver reached with a bearer token alone. */
function withToken(token: string): KubeAccess {
  const ca = readFileSync(cluster.caCert);
  return {
    server: cluster.server,
    apply: async (options) => {
      options.ca = ca;
      options.headers = { ...(options.headers as Record<string, string>), authorization: `Bearer ${token}` };
    },
  };
}

const clientOf = (access: KubeAccess | KubeConfig) => new KubeClient(nodeKubeTransport(access));

/** realAgent is the real node's agent's client: its kubeconfig, its own token (tokens.csv). */
function realAgent(): KubeClient {
  const real = new KubeConfig();
  real.loadFromFile(snapshotAgentKubeconfig(realNode()));
  return clientOf(real);
}

/**
 * userAgent is a node's agent as the apiserver knows a static-token (or client-certificate) user:
 * a name and groups, no extra. The local real node's agent is one (tokens.csv).
 */
const userAgent = (name: string) =>
  clientOf(withHeaders({ "impersonate-user": name, "impersonate-group": SNAPSHOT_AGENT_GROUP }));

/** create writes a snapshot as a pause does (the host's write), of a node's pod. */
const create = (node: string, opts: { finalizer?: boolean } = {}): Promise<SandboxSnapshot> =>
  admin.createSnapshot(ns, agentTestSnapshot(newId(), node, opts));

/** committed is the status an agent writes for a commit of generation 1. */
const committed = (image: string): SandboxSnapshotStatus => ({
  phase: SNAPSHOT_PHASE.COMMITTED,
  observedGeneration: 1,
  images: { sandbox: image },
  bytes: 1024,
});

/** denial is the message of the policy's refusal of a write; the test fails if it was allowed. */
async function denial(write: Promise<unknown>): Promise<string> {
  const e = await write.then(
    () => new Error("the write was allowed"),
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(KubeError);
  expect((e as KubeError).status).toBe(403);
  expect((e as KubeError).message).toContain(`ValidatingAdmissionPolicy '${POLICY}'`);
  return (e as KubeError).message;
}

/** deleted asks for a snapshot's deletion and reads it back, held by its finalizer. */
async function deleted(s: SandboxSnapshot): Promise<SandboxSnapshot> {
  const name = s.metadata?.name ?? "";
  await admin.deleteSnapshot(ns, name);
  const held = await admin.getSnapshot(ns, name);
  expect(held.metadata?.deletionTimestamp).toBeTruthy();
  return held;
}

const gone = (name: string) =>
  until(
    `snapshot ${name} gone`,
    30_000,
    async () => (await orMissing(admin.getSnapshot(ns, name))) === undefined,
  );

beforeAll(async () => {
  ({ ns, cleanup } = await newNamespace(core, "snappolicy"));
  // The DaemonSet's identity as the component installs it: its ServiceAccount, bound to its role.
  await core.createNamespace({ body: { metadata: { name: SA.namespace } } }).catch(() => {});
  const rbac = readFileSync(
    new URL("../../infra/deploy/components/snapshots/rbac.yaml", import.meta.url),
    "utf8",
  );
  await apply(
    kc,
    parseAllDocuments(rbac).map((d) => d.toJS() as KubernetesObject),
  );
  // A policy is enforced a moment after it is created: wait until the real node's agent is refused
  // another node's snapshot (at once, unless the cluster has no policy), on a probe of its own.
  const probe = await create(OTHER);
  const agent = realAgent();
  await until("the policy refusing the real node's agent another node's snapshot", 30_000, async () => {
    const fresh = await admin.getSnapshot(ns, probe.metadata?.name ?? "");
    return agent.replaceSnapshotStatus(ns, { ...fresh, status: { message: "probe" } }).then(
      () => false,
      (e: unknown) => e instanceof KubeError && e.status === 403 && e.message.includes(POLICY),
    );
  });
});
afterAll(async () => {
  await cleanup();
});

describe("the snapshot agent's admission policy", () => {
  it("is the component's, applied by `cluster up` with the real node's agent", async () => {
    const file = parseAllDocuments(readFileSync(AGENT_POLICY, "utf8")).map(
      (d) => d.toJS() as KubernetesObject & { spec: object },
    );
    expect(file.map((o) => o.kind)).toEqual([
      "ValidatingAdmissionPolicy",
      "ValidatingAdmissionPolicyBinding",
    ]);
    const send = nodeKubeTransport(kc);
    for (const o of file) {
      const plural =
        o.kind === "ValidatingAdmissionPolicy"
          ? "validatingadmissionpolicies"
          : "validatingadmissionpolicybindings";
      const res = await send({
        method: "GET",
        path: `/apis/admissionregistration.k8s.io/v1/${plural}/${o.metadata?.name}`,
      });
      expect(res.status, `${o.kind} ${o.metadata?.name} in the cluster`).toBe(200);
      expect((JSON.parse(res.body) as { spec: object }).spec).toMatchObject(o.spec);
    }
  });

  it("refuses the real node's agent (its own token) another node's snapshot, naming spec.source.node", async () => {
    const client = realAgent();
    const other = await create(OTHER, { finalizer: true });
    const message = await denial(
      client.replaceSnapshotStatus(ns, { ...other, status: committed("attacker/image:1") }),
    );
    expect(message).toContain(
      `the snapshot agent of node ${realNode().name} may not write a SandboxSnapshot whose spec.source.node is ${OTHER}`,
    );
    // Nor its finalizer, deleted or not.
    const held = await deleted(other);
    expect(await denial(client.replaceSnapshot(ns, withoutFinalizer(held)))).toContain(
      `whose spec.source.node is ${OTHER}`,
    );
    const after = await admin.getSnapshot(ns, other.metadata?.name ?? "");
    expect(after.status?.images).toBeUndefined();
    expect(after.metadata?.finalizers).toEqual([SNAPSHOT_FINALIZER]);
    await admin.replaceSnapshot(ns, withoutFinalizer(after));
  });

  it("lets the real node's agent write its own node's snapshot: the commit's outcome, then the finalizer", async () => {
    const s = await create(realNode().name, { finalizer: true });
    const name = s.metadata?.name ?? "";
    // No such container on the node: the agent's answer is Failed, written with its own token.
    const failed = await until(`${name} answered by the real node's agent`, 30_000, async () => {
      const fresh = await admin.getSnapshot(ns, name);
      return fresh.status?.observedGeneration === 1 ? fresh : undefined;
    });
    expect(failed.status?.phase).toBe(SNAPSHOT_PHASE.FAILED);
    await admin.deleteSnapshot(ns, name);
    await gone(name);
  });

  describe("a user agent (static token): its node is its name", () => {
    const agent = userAgent(snapshotAgentUser(NODE));

    it("writes the status of its node's snapshot; a spec in that write changes nothing", async () => {
      const s = await create(NODE);
      const written = await agent.replaceSnapshotStatus(ns, {
        ...s,
        spec: { ...s.spec, pool: "pool-b" },
        status: committed("registry.test/agentbox-snapshots/x:g1"),
      });
      expect(written.status).toEqual(committed("registry.test/agentbox-snapshots/x:g1"));
      const stored = await admin.getSnapshot(ns, s.metadata?.name ?? "");
      expect(stored.status?.images).toEqual({ sandbox: "registry.test/agentbox-snapshots/x:g1" });
      // The apiserver keeps the stored spec on /status writes (the policy's spec rule is a second guard).
      expect(stored.spec).toEqual(s.spec);
    });

    it("may not write another node's snapshot, status or object", async () => {
      const s = await create(OTHER);
      expect(
        await denial(agent.replaceSnapshotStatus(ns, { ...s, status: committed("attacker/image:1") })),
      ).toContain(
        `the snapshot agent of node ${NODE} may not write a SandboxSnapshot whose spec.source.node is ${OTHER}`,
      );
      expect(await denial(agent.replaceSnapshot(ns, s))).toContain(`spec.source.node is ${OTHER}`);
      expect((await admin.getSnapshot(ns, s.metadata?.name ?? "")).status).toBeUndefined();
    });

    it("may not change its node's snapshot's spec, labels, annotations or finalizers", async () => {
      const s = await create(NODE, { finalizer: true });
      expect(
        await denial(
          agent.replaceSnapshot(ns, { ...s, spec: { ...s.spec, source: { ...s.spec.source, node: OTHER } } }),
        ),
      ).toContain("may not change spec");
      expect(
        await denial(agent.replaceSnapshot(ns, { ...s, spec: { ...s.spec, pool: "pool-b" } })),
      ).toContain("may not change spec");
      expect(
        await denial(
          agent.replaceSnapshot(ns, { ...s, metadata: { ...s.metadata, labels: { "x.test/y": "z" } } }),
        ),
      ).toContain("may not change metadata.labels");
      expect(
        await denial(
          agent.replaceSnapshot(ns, { ...s, metadata: { ...s.metadata, annotations: { "x.test/y": "z" } } }),
        ),
      ).toContain("may not change metadata.annotations");
      // The finalizer goes only once the snapshot is deleted, and only the agent's own.
      expect(await denial(agent.replaceSnapshot(ns, withoutFinalizer(s)))).toContain("metadata.finalizers");
      expect(
        await denial(
          agent.replaceSnapshot(ns, {
            ...s,
            metadata: { ...s.metadata, finalizers: [SNAPSHOT_FINALIZER, "x.test/keep"] },
          }),
        ),
      ).toContain("metadata.finalizers");
      const stored = await admin.getSnapshot(ns, s.metadata?.name ?? "");
      expect(stored.spec).toEqual(s.spec);
      expect(stored.metadata?.labels).toBeUndefined();
      expect(stored.metadata?.finalizers).toEqual([SNAPSHOT_FINALIZER]);
    });

    it("removes the finalizer of its node's deleted snapshot, and nothing else with it", async () => {
      const held = await deleted(await create(NODE, { finalizer: true }));
      const name = held.metadata?.name ?? "";
      expect(
        await denial(
          agent.replaceSnapshot(ns, {
            ...withoutFinalizer(held),
            metadata: { ...withoutFinalizer(held).metadata, labels: { "x.test/y": "z" } },
          }),
        ),
      ).toContain("may not change metadata.labels");
      await agent.replaceSnapshot(ns, withoutFinalizer(held));
      await gone(name);
    });

    it("is refused everything when its name names no node", async () => {
      const s = await create(NODE);
      const nameless = userAgent("agentbox-snapshot-agent-without-a-node");
      expect(await denial(nameless.replaceSnapshotStatus(ns, { ...s, status: committed("x:1") }))).toContain(
        "identity names no node",
      );
    });
  });

  describe("the DaemonSet's ServiceAccount: its node is its token's pod's", () => {
    it("writes its node's snapshots only, with the token the kubelet would mount", async () => {
      // The agent's pod on NODE (no kubelet runs it: its token is all this needs), and a token bound
      // to it, as the projected volume gets.
      const podName = `snapshot-agent-${randomBytes(4).toString("hex")}`;
      const pod = await core.createNamespacedPod({
        namespace: SA.namespace,
        body: {
          metadata: { name: podName },
          spec: {
            nodeName: NODE,
            serviceAccountName: SA.name,
            automountServiceAccountToken: false,
            containers: [{ name: "agent", image: "agentbox.invalid/snapshot-agent:none" }],
          },
        },
      });
      try {
        const token = await core.createNamespacedServiceAccountToken({
          name: SA.name,
          namespace: SA.namespace,
          body: {
            spec: {
              audiences: [],
              expirationSeconds: 600,
              boundObjectRef: { apiVersion: "v1", kind: "Pod", name: podName, uid: pod.metadata?.uid ?? "" },
            },
          },
        });
        const access = withToken(token.status?.token ?? "");
        // The apiserver (1.36) puts the pod's node in the user's extra.
        const review = await nodeKubeTransport(access)({
          method: "POST",
          path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
          body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
        });
        expect(JSON.parse(review.body)).toMatchObject({
          status: {
            userInfo: {
              username: `system:serviceaccount:${SA.namespace}:${SA.name}`,
              extra: { "authentication.kubernetes.io/node-name": [NODE] },
            },
          },
        });
        const agent = clientOf(access);
        const own = await create(NODE);
        const written = await agent.replaceSnapshotStatus(ns, { ...own, status: committed("r.test/x:g1") });
        expect(written.status?.phase).toBe(SNAPSHOT_PHASE.COMMITTED);
        expect(
          await denial(agent.replaceSnapshot(ns, { ...written, spec: { ...written.spec, pool: "b" } })),
        ).toContain("may not change spec");
        const other = await create(OTHER);
        expect(
          await denial(agent.replaceSnapshotStatus(ns, { ...other, status: committed("attacker/image:1") })),
        ).toContain(
          `the snapshot agent of node ${NODE} may not write a SandboxSnapshot whose spec.source.node is ${OTHER}`,
        );
        expect((await admin.getSnapshot(ns, other.metadata?.name ?? "")).status).toBeUndefined();
      } finally {
        await core.deleteNamespacedPod({ name: podName, namespace: SA.namespace, gracePeriodSeconds: 0 });
      }
    });

    it("is refused everything with a token bound to no pod (no node)", async () => {
      const token = await core.createNamespacedServiceAccountToken({
        name: SA.name,
        namespace: SA.namespace,
        body: { spec: { audiences: [], expirationSeconds: 600 } },
      });
      const agent = clientOf(withToken(token.status?.token ?? ""));
      const s = await create(NODE);
      expect(await denial(agent.replaceSnapshotStatus(ns, { ...s, status: committed("x:1") }))).toContain(
        "identity names no node",
      );
    });
  });

  it("leaves the hosts alone: the admin's and the host's ServiceAccount's writes to any node's snapshot", async () => {
    const host = clientOf(withToken(await namespacedToken(kc, core, ns)));
    for (const [who, client] of [
      ["admin", admin],
      ["host", host],
    ] as const) {
      const s = await create(OTHER, { finalizer: true });
      const relabelled = await client.replaceSnapshot(ns, {
        ...s,
        metadata: { ...s.metadata, labels: { "x.test/y": who } },
        spec: { ...s.spec, pool: "pool-b" },
      });
      expect(relabelled.spec.pool).toBe("pool-b");
      const written = await client.replaceSnapshotStatus(ns, {
        ...relabelled,
        status: committed("r.test/x:g1"),
      });
      expect(written.status?.phase).toBe(SNAPSHOT_PHASE.COMMITTED);
      const freed = await client.replaceSnapshot(ns, withoutFinalizer(written));
      expect(freed.metadata?.finalizers ?? []).toEqual([]);
    }
  });
});
