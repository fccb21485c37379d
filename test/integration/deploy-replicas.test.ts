import type { V1ConfigMap, V1PersistentVolumeClaim, V1PodDisruptionBudget } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { ANSWER_MS } from "../../hosts/node/drain.ts";
import { nodeKubeTransport } from "../../hosts/node/kube-transport.ts";
import {
  base,
  dryRun,
  envValue,
  HOST,
  historySecret,
  hostContainer,
  hostSettings,
  mountOf,
  one,
  sqlite,
  withHostEnv,
} from "./support/deploy-manifests.ts";
import { kube } from "./support/kube.ts";
import type { Manifest } from "./support/kustomize.ts";

// What infra/deploy runs (issue #25): the base, several hosts over one PostgreSQL history, that
// roll, drain and stop without a gap; its URL a Secret's file the operator creates (the example
// Secret must be one the host reads); and the SQLite overlay, one host on a volume as before.
// The objects themselves are dry-run against the apiserver in deploy.test.ts.

const { kc, core } = kube();
const send = nodeKubeTransport(kc);

describe("infra/deploy: replicas, shutdown and the history", () => {
  it("runs several replicas that roll and are drained one at a time, spread over nodes and zones", () => {
    const objects = base();
    const { deployment, pod, labels } = hostContainer(objects);
    expect(deployment.spec?.replicas).toBeGreaterThanOrEqual(2);
    // A rollout starts a new host and waits for it to be ready before it stops an old one.
    expect(deployment.spec?.strategy).toEqual({
      type: "RollingUpdate",
      rollingUpdate: { maxUnavailable: 0, maxSurge: 1 },
    });
    // One budget, over exactly the Deployment's pods: a drain evicts one host at a time, and
    // still evicts a host that is not ready (it serves nothing; blocking the drain helps no one).
    const budgets = objects.filter(
      (o) => o.kind === "PodDisruptionBudget",
    ) as unknown as V1PodDisruptionBudget[];
    expect(budgets).toHaveLength(1);
    const [budget] = budgets;
    expect(budget?.metadata?.namespace).toBe(deployment.metadata?.namespace);
    expect(budget?.spec?.selector).toEqual(deployment.spec?.selector);
    expect(labels).toMatchObject(budget?.spec?.selector?.matchLabels ?? { none: "none" });
    expect(budget?.spec).toMatchObject({ maxUnavailable: 1, unhealthyPodEvictionPolicy: "AlwaysAllow" });
    expect(budget?.spec?.minAvailable).toBeUndefined();
    // Hosts on distinct nodes (nodes the pod cannot go to do not count), and zones where there are.
    const spread = pod?.topologySpreadConstraints ?? [];
    expect(spread.map((c) => [c.topologyKey, c.whenUnsatisfiable, c.nodeTaintsPolicy])).toEqual([
      ["kubernetes.io/hostname", "DoNotSchedule", "Honor"],
      ["topology.kubernetes.io/zone", "ScheduleAnyway", undefined],
    ]);
    for (const c of spread) {
      expect(c.maxSkew).toBe(1);
      expect(c.labelSelector).toEqual(deployment.spec?.selector);
      // Only the pods of one revision are spread: a rollout's old pods do not skew the new ones.
      expect(c.matchLabelKeys).toEqual(["pod-template-hash"]);
    }
  });

  it("lets a host leave its Services before it stops listening, and gives it time to drain", () => {
    const objects = base();
    const { pod, container } = hostContainer(objects);
    // Ready only while it takes new work: the host answers /readyz 503 from SIGTERM on.
    expect(container.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "https", scheme: "HTTPS" });
    // Alive while it drains: liveness stays on /healthz, which a draining host still answers.
    expect(container.livenessProbe?.httpGet?.path).toBe("/healthz");
    // The endpoints drop while the host still serves (the preStop sleep, before SIGTERM)...
    const sleep = container.lifecycle?.preStop?.sleep?.seconds ?? 0;
    expect(sleep).toBeGreaterThanOrEqual(3);
    // ...and the grace period, which counts from the deletion, covers that sleep and the host's
    // whole drain as its settings say (drain: settle, grace, waits handed back), and then some:
    // else the kubelet kills a host that is still draining.
    const shutdown = withHostEnv(objects, (env) => {
      const read = hostSettings(env);
      return read.value.shutdown;
    });
    expect(shutdown.settleMs).toBeGreaterThan(0);
    const drainSeconds = (shutdown.settleMs + shutdown.graceMs + ANSWER_MS) / 1000;
    expect(pod?.terminationGracePeriodSeconds).toBeGreaterThan(sleep + drainSeconds);
  });

  it("keeps the history in PostgreSQL, its URL a mounted Secret's key the operator creates", () => {
    const objects = base();
    const { container } = hostContainer(objects);
    const config = one<V1ConfigMap>(objects, "ConfigMap", HOST).data ?? {};
    // No plaintext URL, and no SQLite volume: nothing ties a host to one node.
    for (const name of ["AGENTBOX_HISTORY_URL", "AGENTBOX_HISTORY_PATH"]) {
      expect(container.env?.map((e) => e.name)).not.toContain(name);
      expect(Object.keys(config)).not.toContain(name);
    }
    expect(objects.map((o) => o.kind)).not.toContain("PersistentVolumeClaim");
    expect(objects.map((o) => o.kind)).not.toContain("Secret");
    expect(config.AGENTBOX_HISTORY_SSLMODE).toBe("verify-full");
    // The URL is a file of a Secret volume: the example's Secret, by name and key.
    const file = envValue(container, "AGENTBOX_HISTORY_URL_FILE") ?? "";
    const { volume, key } = mountOf(objects, file);
    const [secret, ...others] = historySecret();
    expect(others).toEqual([]);
    expect(volume?.secret?.secretName).toBe(secret?.metadata?.name);
    expect(Object.keys(secret?.stringData ?? {})).toContain(key);
    withHostEnv(objects, (env) => {
      const read = hostSettings(env);
      expect(read.value.historyDatabase).toMatchObject({
        url: secret?.stringData?.[key],
        sslmode: "verify-full",
      });
    });
  });

  it("ships the example history Secret in the base's namespace, one the apiserver takes", async () => {
    const secrets = historySecret();
    expect(secrets.map((s) => s.metadata?.namespace)).toEqual([
      hostContainer(base()).deployment.metadata?.namespace,
    ]);
    await core.createNamespace({ body: { metadata: { name: "agentbox-system" } } }).catch(() => {});
    expect(await dryRun(send, secrets as unknown as Manifest[])).toEqual([]);
  });

  it("keeps one host on a SQLite volume in the SQLite overlay, as before", () => {
    const objects = sqlite();
    const { deployment, pod, container } = hostContainer(objects);
    expect(deployment.spec?.replicas).toBe(1);
    expect(deployment.spec?.strategy).toEqual({ type: "Recreate" });
    // The history file lies on the overlay's ReadWriteOnce claim; no PostgreSQL setting is left.
    const path = envValue(container, "AGENTBOX_HISTORY_PATH") ?? "";
    const { volume } = mountOf(objects, path);
    const claim = one<V1PersistentVolumeClaim>(
      objects,
      "PersistentVolumeClaim",
      volume?.persistentVolumeClaim?.claimName ?? "",
    );
    expect(claim.spec?.accessModes).toEqual(["ReadWriteOnce"]);
    const config = one<V1ConfigMap>(objects, "ConfigMap", HOST).data ?? {};
    const names = [...(container.env ?? []).map((e) => e.name), ...Object.keys(config)];
    expect(names.filter((n) => n.startsWith("AGENTBOX_HISTORY_"))).toEqual(["AGENTBOX_HISTORY_PATH"]);
    const secretNames = historySecret().map((s) => s.metadata?.name);
    expect(pod?.volumes?.filter((v) => secretNames.includes(v.secret?.secretName))).toEqual([]);
    // A budget, if any, still lets a drain evict the one host.
    for (const b of objects.filter(
      (o) => o.kind === "PodDisruptionBudget",
    ) as unknown as V1PodDisruptionBudget[])
      expect(b.spec?.maxUnavailable).toBeGreaterThanOrEqual(1);
    withHostEnv(objects, (env) => {
      const read = hostSettings(env);
      expect(read.value.historyDatabase).toBeUndefined();
      expect(read.value.historyPath).toBe(path);
    });
  });
});
