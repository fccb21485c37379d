import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { type KubeAccess, nodeKubeTransport } from "../../hosts/node/kube-transport.ts";
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
import {
  committedStatus,
  failedStatus,
  withoutFinalizer,
  withoutStale,
} from "../../lib/snapshots/agent-work.ts";
import { withHeaders } from "./support/impersonation.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { realNode } from "./support/real-node.ts";
import { namespacedToken } from "./support/scoped-token.ts";
import { AGENT_TEST_NODES, agentTestSnapshot } from "./support/snapshot-agent-nodes.ts";

// The snapshot agent's admission policy (infra/deploy/components/snapshots/admission-policy.yaml,
// ADR 0045) against the real apiserver, as `cluster up` applies it beside the real node's agent:
// an agent writes only the SandboxSnapshots of its own node, and of the object itself only the
// removal of its finalizer from a deleted one; of the status, what the agent does: a commit's
// outcome while one is asked for, else only the removal of staleImages entries. Its node comes
// from its identity: the pod its ServiceAccount token is bound to (the DaemonSet), or its user
// name (the local real node's static token). The hosts' writes are not its business.

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
  clientOf(withHeaders(kc, { "impersonate-user": name, "impersonate-group": SNAPSHOT_AGENT_GROUP }));

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

/** image is a snapshot image of generation `g` of container `container`, by digest. */
const image = (g: number, container = "sandbox", digit = "a") =>
  `registry.test/agentbox-snapshots/${ns}/x/${container}:g${g}@sha256:${digit.repeat(64)}`;
const AT = "2026-01-02T03:04:05Z";

/**
 * afterPause is the status the hosts write once a pause (generation 1's commit) is done and, for
 * Resuming and Resumed, a resume claims a pod: the images a resume runs, an earlier pause's images
 * the agent has yet to delete, the pause's and resume's records.
 */
const afterPause = (phase: SandboxSnapshotStatus["phase"]): SandboxSnapshotStatus => ({
  phase,
  observedGeneration: 1,
  images: { sandbox: image(1) },
  staleImages: { "sandbox:g0": image(0), "sidecar:g0": image(0, "sidecar") },
  bytes: 1024,
  committedAt: AT,
  pausedAt: AT,
  resumes: 1,
  ...(phase === SNAPSHOT_PHASE.PAUSED
    ? { recorded: { paused: 1 } }
    : {
        resume: { attempt: "resume-attempt-1", until: AT, pod: "pool-a-x" },
        resumedAt: AT,
        recorded: { paused: 1, resumed: 1 },
      }),
});

/**
 * committing is the status of a second pause asked for after a resume: the spec's source changed
 * (generation 2), the hosts' records of the first pause and resume kept.
 */
async function committing(node: string, opts: { finalizer?: boolean } = {}): Promise<SandboxSnapshot> {
  const s = await create(node, opts);
  const paused = await admin.replaceSnapshotStatus(ns, { ...s, status: afterPause(SNAPSHOT_PHASE.RESUMED) });
  const again = await admin.replaceSnapshot(ns, {
    ...paused,
    spec: { ...paused.spec, source: { ...paused.spec.source, pod: "pool-a-y", podUID: "uid-2" } },
  });
  expect(again.metadata?.generation).toBe(2);
  const { staleImages: _, ...kept } = afterPause(SNAPSHOT_PHASE.RESUMED);
  return admin.replaceSnapshotStatus(ns, { ...again, status: { ...kept, phase: SNAPSHOT_PHASE.COMMITTING } });
}

/** withStatus is a snapshot of `node` with the status the hosts wrote. */
async function withStatus(
  node: string,
  status: SandboxSnapshotStatus,
  opts: { finalizer?: boolean } = {},
): Promise<SandboxSnapshot> {
  const s = await create(node, opts);
  return admin.replaceSnapshotStatus(ns, { ...s, status });
}

/** storedStatus is the snapshot's status as stored. */
const storedStatus = async (s: SandboxSnapshot) =>
  (await admin.getSnapshot(ns, s.metadata?.name ?? "")).status;

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

  describe("a user agent's status writes: what the agent does, nothing more", () => {
    const agent = userAgent(snapshotAgentUser(NODE));

    it("may not mark a Resumed snapshot Paused (a resume would run its images), naming status.phase", async () => {
      const s = await withStatus(NODE, afterPause(SNAPSHOT_PHASE.RESUMED));
      expect(
        await denial(
          agent.replaceSnapshotStatus(ns, { ...s, status: { ...s.status, phase: SNAPSHOT_PHASE.PAUSED } }),
        ),
      ).toContain("the snapshot agent may not change status.phase of a SandboxSnapshot in phase Resumed");
      // Nor with images of its choosing, nor with a resume of its own.
      const message = await denial(
        agent.replaceSnapshotStatus(ns, {
          ...s,
          status: {
            ...s.status,
            phase: SNAPSHOT_PHASE.PAUSED,
            images: { sandbox: "attacker.test/image:1" },
            resume: { attempt: "resume-attempt-0", until: AT },
          },
        }),
      );
      expect(message).toContain(
        "may not change status.phase, status.images, status.resume of a SandboxSnapshot",
      );
      expect(await storedStatus(s)).toEqual(afterPause(SNAPSHOT_PHASE.RESUMED));
    });

    it("may not rewrite a Paused snapshot's images", async () => {
      const s = await withStatus(NODE, afterPause(SNAPSHOT_PHASE.PAUSED));
      expect(
        await denial(
          agent.replaceSnapshotStatus(ns, {
            ...s,
            status: { ...s.status, images: { sandbox: "attacker.test/image:1" } },
          }),
        ),
      ).toContain("the snapshot agent may not change status.images of a SandboxSnapshot in phase Paused");
      // Nor drop them, nor add a container's.
      const { images: _, ...without } = s.status ?? {};
      expect(await denial(agent.replaceSnapshotStatus(ns, { ...s, status: without }))).toContain(
        "may not change status.images of",
      );
      expect(
        await denial(
          agent.replaceSnapshotStatus(ns, {
            ...s,
            status: { ...s.status, images: { ...s.status?.images, sidecar: "attacker.test/image:1" } },
          }),
        ),
      ).toContain("may not change status.images of");
      expect(await storedStatus(s)).toEqual(afterPause(SNAPSHOT_PHASE.PAUSED));
    });

    it("may not reset resumes or resume, nor add or remove any other hosts' field", async () => {
      const s = await withStatus(NODE, afterPause(SNAPSHOT_PHASE.RESUMED));
      const write = (status: SandboxSnapshotStatus) =>
        denial(agent.replaceSnapshotStatus(ns, { ...s, status }));
      expect(await write({ ...s.status, resumes: 0 })).toContain("may not change status.resumes of");
      const { resumes: _, ...noResumes } = s.status ?? {};
      expect(await write(noResumes)).toContain("may not change status.resumes of");
      // The attempt names the envd token a resume issues: reissuing one it saw is refused.
      expect(
        await write({ ...s.status, resume: { attempt: "resume-attempt-0", until: AT, pod: "pool-a-x" } }),
      ).toContain("may not change status.resume of");
      const { resume: __, ...noResume } = s.status ?? {};
      expect(await write(noResume)).toContain("may not change status.resume of");
      expect(await write({ ...s.status, resumedAt: "2026-01-02T03:04:06Z" })).toContain(
        "may not change status.resumedAt of",
      );
      expect(await write({ ...s.status, observedGeneration: 2 })).toContain(
        "may not change status.observedGeneration of",
      );
      // What the history holds is the hosts' to say.
      expect(await write({ ...s.status, recorded: { paused: 1 } })).toContain(
        "may not change status.recorded of",
      );
      const { recorded: ___, ...noRecorded } = s.status ?? {};
      expect(await write(noRecorded)).toContain("may not change status.recorded of");
      // A field the agent writes only with a commit's outcome is not its own once paused.
      expect(await write({ ...s.status, message: "x" })).toContain("may not change status.message of");
      const paused = await withStatus(NODE, afterPause(SNAPSHOT_PHASE.PAUSED));
      expect(
        await denial(
          agent.replaceSnapshotStatus(ns, { ...paused, status: { ...paused.status, resumedAt: AT } }),
        ),
      ).toContain("may not change status.resumedAt of a SandboxSnapshot in phase Paused");
      expect(
        await denial(
          agent.replaceSnapshotStatus(ns, {
            ...paused,
            status: {
              ...paused.status,
              conditions: [
                { type: "Ready", status: "True", reason: "X", message: "", lastTransitionTime: AT },
              ],
            },
          }),
        ),
      ).toContain("may not change status.conditions of");
      expect(await storedStatus(s)).toEqual(afterPause(SNAPSHOT_PHASE.RESUMED));
      expect(await storedStatus(paused)).toEqual(afterPause(SNAPSHOT_PHASE.PAUSED));
    });

    it("removes the staleImages entries it deleted from a Paused, Resuming or Resumed snapshot, as it does", async () => {
      for (const phase of [SNAPSHOT_PHASE.PAUSED, SNAPSHOT_PHASE.RESUMING, SNAPSHOT_PHASE.RESUMED]) {
        const s = await withStatus(NODE, afterPause(phase));
        const one = await agent.replaceSnapshotStatus(ns, { ...s, status: withoutStale(s, ["sandbox:g0"]) });
        expect(one.status?.staleImages).toEqual({ "sidecar:g0": image(0, "sidecar") });
        // The last one goes with the field.
        const none = await agent.replaceSnapshotStatus(ns, {
          ...one,
          status: withoutStale(one, ["sidecar:g0"]),
        });
        const { staleImages: _, ...rest } = afterPause(phase);
        expect(none.status).toEqual(rest);
        expect(await storedStatus(s)).toEqual(rest);
      }
    });

    it("may not add or change a staleImages entry once paused", async () => {
      const s = await withStatus(NODE, afterPause(SNAPSHOT_PHASE.PAUSED));
      const write = (staleImages: Record<string, string>) =>
        denial(agent.replaceSnapshotStatus(ns, { ...s, status: { ...s.status, staleImages } }));
      // An image named stale is deleted by the agent: not one a host still runs.
      expect(await write({ ...s.status?.staleImages, "sandbox:g1": image(1) })).toContain(
        "may only remove entries of status.staleImages of a SandboxSnapshot in phase Paused, not add or change sandbox:g1",
      );
      expect(await write({ "sandbox:g0": image(1) })).toContain("not add or change sandbox:g0");
      const resumed = await withStatus(NODE, afterPause(SNAPSHOT_PHASE.RESUMED));
      const { staleImages: _, ...noStale } = afterPause(SNAPSHOT_PHASE.RESUMED);
      const clean = await admin.replaceSnapshotStatus(ns, { ...resumed, status: noStale });
      expect(
        await denial(
          agent.replaceSnapshotStatus(ns, {
            ...clean,
            status: { ...clean.status, staleImages: { "sandbox:g1": image(1) } },
          }),
        ),
      ).toContain("in phase Resumed, not add or change sandbox:g1");
      expect(await storedStatus(s)).toEqual(afterPause(SNAPSHOT_PHASE.PAUSED));
      expect(await storedStatus(clean)).toEqual(noStale);
    });

    it("answers a commit asked for (Committing): Committed with images, bytes, committedAt, observedGeneration; the hosts' fields kept", async () => {
      const s = await committing(NODE);
      const now = new Date("2026-01-03T00:00:00Z");
      const status = committedStatus(s, 2, { sandbox: { image: image(2), bytes: 2048 } }, now);
      const written = await agent.replaceSnapshotStatus(ns, { ...s, status });
      expect(written.status).toEqual({
        ...afterPause(SNAPSHOT_PHASE.RESUMED),
        phase: SNAPSHOT_PHASE.COMMITTED,
        observedGeneration: 2,
        images: { sandbox: image(2) },
        staleImages: { "sandbox:g1": image(1) },
        bytes: 2048,
        committedAt: now.toISOString(),
      });
      // Or Failed, with why.
      const other = await committing(NODE);
      const failed = await agent.replaceSnapshotStatus(ns, {
        ...other,
        status: failedStatus(other, 2, "no such container"),
      });
      expect(failed.status?.phase).toBe(SNAPSHOT_PHASE.FAILED);
      expect(failed.status?.message).toBe("no such container");
      expect(failed.status?.resumes).toBe(1);
    });

    it("may not change the hosts' fields with a commit's outcome", async () => {
      const s = await committing(NODE);
      const status = committedStatus(s, 2, { sandbox: { image: image(2), bytes: 2048 } }, new Date());
      const write = (st: SandboxSnapshotStatus) =>
        denial(agent.replaceSnapshotStatus(ns, { ...s, status: st }));
      expect(await write({ ...status, resumes: 0 })).toContain(
        "the snapshot agent may not change status.resumes when it answers a commit",
      );
      const { resume: _, pausedAt: __, ...dropped } = status;
      expect(await write(dropped)).toContain(
        "may not change status.pausedAt, status.resume when it answers a commit",
      );
      expect(await write({ ...status, resume: { attempt: "resume-attempt-0", until: AT } })).toContain(
        "may not change status.resume when",
      );
      expect(await write({ ...status, recorded: { paused: 2, resumed: 1 } })).toContain(
        "may not change status.recorded when",
      );
      expect((await storedStatus(s))?.phase).toBe(SNAPSHOT_PHASE.COMMITTING);
    });

    it("may only answer a commit with Committed or Failed of the object's generation, once", async () => {
      const s = await committing(NODE);
      const status = committedStatus(s, 2, { sandbox: { image: image(2), bytes: 2048 } }, new Date());
      const write = (st: SandboxSnapshotStatus) =>
        denial(agent.replaceSnapshotStatus(ns, { ...s, status: st }));
      expect(await write({ ...status, phase: SNAPSHOT_PHASE.PAUSED })).toContain(
        "the snapshot agent may only answer a commit with status.phase Committed or Failed, not Paused",
      );
      expect(await write({ ...status, phase: SNAPSHOT_PHASE.RESUMED })).toContain("not Resumed");
      expect(await write({ ...s.status, message: "x" })).toContain("not Committing");
      expect(await write({ ...status, observedGeneration: 1 })).toContain(
        "the snapshot agent must answer a commit with status.observedGeneration 2 (metadata.generation), not 1",
      );
      const { observedGeneration: _, ...noGeneration } = status;
      expect(await write(noGeneration)).toContain(
        "status.observedGeneration 2 (metadata.generation), not (none)",
      );
      // A snapshot no pause asked of yet (no status): the same.
      const fresh = await create(NODE);
      expect(
        await denial(
          agent.replaceSnapshotStatus(ns, {
            ...fresh,
            status: { ...committed(image(1)), phase: SNAPSHOT_PHASE.PAUSED },
          }),
        ),
      ).toContain("status.phase Committed or Failed, not Paused");
      expect((await storedStatus(s))?.phase).toBe(SNAPSHOT_PHASE.COMMITTING);
      expect(await storedStatus(fresh)).toBeUndefined();
      // A generation it answered already is not answered again, even put back to Committing.
      const answered = await admin.replaceSnapshotStatus(ns, {
        ...s,
        status: { ...s.status, observedGeneration: 2 },
      });
      expect(await denial(agent.replaceSnapshotStatus(ns, { ...answered, status }))).toContain(
        "the snapshot agent already answered the commit of generation 2",
      );
    });

    it("removes the finalizer of a deleted snapshot in any phase: the object's write keeps the status", async () => {
      for (const held of [
        await deleted(await committing(NODE, { finalizer: true })),
        await deleted(await withStatus(NODE, afterPause(SNAPSHOT_PHASE.RESUMED), { finalizer: true })),
      ]) {
        // A status sent with the object is not written (the apiserver keeps the stored one).
        await agent.replaceSnapshot(ns, {
          ...withoutFinalizer(held),
          status: { ...held.status, phase: SNAPSHOT_PHASE.PAUSED },
        });
        await gone(held.metadata?.name ?? "");
      }
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
