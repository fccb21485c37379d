import type { V1ContainerStatus, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { claimSandbox } from "../../functions/claim-sandbox.ts";
import { releaseSandbox } from "../../functions/release-sandbox.ts";
import { SANDBOX_STATUS_DETAIL_ANNOTATION } from "../../lib/crd/keys.ts";
import { kube } from "./support/kube.ts";
import { execIn } from "./support/kube-exec.ts";
import { REAL_IMAGES, realNode, realPoolSpec } from "./support/real-node.ts";
import { isReady, phaseOf, poolTest, reconcileUntil } from "./support/steps.ts";

// Failures on the real node (kubelet, containerd, runc), through the real steps: the kernel's
// OOM killer under a memory limit, a sandbox whose main process exits 1, an image the registry
// does not have, and the startup timeout. Each case asserts what the product records or answers,
// and logs the container statuses the real kubelet gave, for comparison with kwok's stages.

const { kc } = kube();
const t = poolTest("rfail");
const { deps, pods, getPool } = t;

/** LIMITED is the sandbox container's resources in these pools: a memory limit a tenant can pass. */
const LIMITED = { requests: { cpu: "50m", memory: "64Mi" }, limits: { memory: "128Mi" } };

/** ALLOCATE grows the heap 1 MiB at a time until the kernel kills it. */
const ALLOCATE = "const a=[];for(;;)a.push(Buffer.alloc(1<<20,1))";

/**
 * TRIPWIRE is the main process of the "trip" pool: envd in the background, and a shell that waits
 * on a FIFO for what to do (a test writes to it through exec): `oom` makes the main process
 * itself allocate past the limit, a number makes it exit with that status. It acts only once the
 * writer's process is gone (at most 10 s): the container's end kills every process in it, and an
 * exec still finishing would come back 137 instead of its own status.
 */
const TRIPWIRE = `/usr/local/bin/node /opt/envd/envd.mjs &
rm -f /tmp/trip && mkfifo /tmp/trip
read writer what < /tmp/trip
i=0; while [ -d "/proc/$writer" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
case "$what" in
  oom) exec /usr/local/bin/node -e '${ALLOCATE}' ;;
  *) exit "$what" ;;
esac`;

/**
 * trip writes its own pid and `what` into the tripwire once the FIFO is there (the shell makes it
 * at start), then exits: the tripwire waits for that exit before it acts.
 */
const trip = (what: string) =>
  `for i in $(seq 100); do [ -p /tmp/trip ] && break; sleep 0.1; done; [ -p /tmp/trip ] || exit 3; echo "$$ ${what}" > /tmp/trip`;

/** ShapeLog keeps each distinct container status shape a case went through, in order. */
class ShapeLog {
  readonly seen: { container: string; shape: Partial<V1ContainerStatus> }[] = [];
  private readonly keys = new Set<string>();
  readonly label: string;
  constructor(label: string) {
    this.label = label;
  }
  /** add notes the pod's container statuses, without the fields no failure is about. */
  add(pod: V1Pod): void {
    for (const s of pod.status?.containerStatuses ?? []) {
      const shape = {
        containerID: s.containerID,
        image: s.image,
        imageID: s.imageID,
        restartCount: s.restartCount,
        ready: s.ready,
        started: s.started,
        state: s.state,
        lastState: s.lastState,
      };
      // Times change on every restart; the shape is the rest.
      const key = JSON.stringify(shape, (k, v) => (/At$/.test(k) ? "t" : v));
      if (this.keys.has(`${s.name}${key}`)) continue;
      this.keys.add(`${s.name}${key}`);
      this.seen.push({ container: s.name, shape });
    }
  }
  print(): void {
    console.log(
      `[real-node-failures] ${this.label}: container statuses seen\n${JSON.stringify(this.seen, null, 2)}`,
    );
  }
}

const podNamed = async (pool: string, name: string) =>
  (await pods(pool)).find((p) => p.metadata?.name === name);

/** readyRealPool creates a pool on the real node and reconciles until its pods are idle and Ready. */
const readyRealPool = (name: string, replicas: number, spec: Record<string, unknown>) =>
  t.readyPool(name, replicas, spec, undefined, 180_000);

/** runningSandbox claims an idle pod for `image` and reconciles until its sandbox is Running. */
async function runningSandbox(pool: string, pod: V1Pod, sandboxId: string, image: string): Promise<V1Pod> {
  const claimed = await claimSandbox(deps, pod, { sandboxId, containerImages: { sandbox: image } });
  expect(claimed.ok, JSON.stringify(claimed)).toBe(true);
  return reconcileUntil(
    deps,
    t.ns,
    pool,
    `${sandboxId} running`,
    async () => {
      const p = await podNamed(pool, pod.metadata?.name ?? "");
      return p && phaseOf(p) === "running" ? p : undefined;
    },
    120_000,
  );
}

/** backIdle reconciles until the pod is idle and Ready again and the sandbox's record is written. */
function backIdle(pool: string, name: string, sandboxId: string, log: ShapeLog): Promise<V1Pod> {
  return reconcileUntil(
    deps,
    t.ns,
    pool,
    `${name} idle again with a record of ${sandboxId}`,
    async () => {
      const p = await podNamed(pool, name);
      if (p) log.add(p);
      return p && phaseOf(p) === "idle" && isReady(p) && (await deps.history.get(sandboxId)) ? p : undefined;
    },
    120_000,
  );
}

/** tripPool is a pool without an idle image whose sandbox runs TRIPWIRE under a 128 MiB limit. */
function tripPool(): Record<string, unknown> {
  const spec = realPoolSpec(1, { idleImage: false, resources: LIMITED }) as {
    template: { spec: { containers: Record<string, unknown>[] } };
  };
  const [sandbox, ...rest] = spec.template.spec.containers;
  return {
    ...spec,
    template: {
      ...spec.template,
      spec: {
        ...spec.template.spec,
        containers: [{ ...sandbox, command: ["/sbin/agentbox-init", "/bin/sh", "-c", TRIPWIRE] }, ...rest],
      },
    },
  };
}

// Real pulls, restarts and a 30 s startup timeout on a busy two-core machine: generous deadlines.
describe("failures on the real node", { timeout: 300_000 }, () => {
  it("a tenant's process past the memory limit is OOM-killed alone: the sandbox keeps running, then ends Completed", async () => {
    const log = new ShapeLog("tenant process OOM-killed, then released");
    const [pod] = await readyRealPool("tenant-oom", 1, realPoolSpec(1, { resources: LIMITED }));
    const running = await runningSandbox("tenant-oom", pod!, "sbx-tenant-oom", REAL_IMAGES.b);
    log.add(running);
    const before = running.status?.containerStatuses?.find((s) => s.name === "sandbox");
    const started = Date.now();
    const killed = await execIn(kc, running, "sandbox", ["/usr/local/bin/node", "-e", ALLOCATE]);
    console.log(`[real-node-failures] tenant allocation killed after ${Date.now() - started} ms`);
    // SIGKILL from the kernel: the exec reports 128 + 9.
    expect(killed.exitCode).toBe(137);
    // The container lives on (its main process was not the biggest): no restart, no release.
    const after = await reconcileUntil(deps, t.ns, "tenant-oom", "a reconcile after the kill", async () =>
      podNamed("tenant-oom", pod!.metadata!.name!),
    );
    log.add(after);
    const status = after.status?.containerStatuses?.find((s) => s.name === "sandbox");
    expect(phaseOf(after)).toBe("running");
    expect(status?.containerID).toBe(before?.containerID);
    expect(status?.state?.running).toBeDefined();
    expect(await deps.history.get("sbx-tenant-oom")).toBeUndefined();
    // Released by its user: a Completed record, whatever containerd says of the container's end.
    const released = await releaseSandbox(deps, await getPool("tenant-oom"), after, {});
    expect(released.ok).toBe(true);
    const idle = await backIdle("tenant-oom", pod!.metadata!.name!, "sbx-tenant-oom", log);
    log.add(idle);
    log.print();
    const record = await deps.history.get("sbx-tenant-oom");
    expect(record).toMatchObject({ stopReason: "Completed" });
    expect(record?.failureReason).toBeUndefined();
  });

  it("the sandbox's main process OOM-killed: a Failed record, OOMKilled, exit code 137, the pod back in service", async () => {
    const log = new ShapeLog("main process OOM-killed");
    const [pod] = await readyRealPool("trip-oom", 1, tripPool());
    const running = await runningSandbox("trip-oom", pod!, "sbx-main-oom", REAL_IMAGES.b);
    log.add(running);
    const tripped = await execIn(kc, running, "sandbox", ["/bin/sh", "-c", trip("oom")]);
    expect(tripped, JSON.stringify(tripped)).toMatchObject({ exitCode: 0 });
    const idle = await backIdle("trip-oom", pod!.metadata!.name!, "sbx-main-oom", log);
    log.print();
    expect(idle.metadata?.uid).toBe(pod!.metadata?.uid);
    expect(await deps.history.get("sbx-main-oom")).toMatchObject({
      stopReason: "Failed",
      failureReason: "OOMKilled",
      exitCode: 137,
    });
  });

  it("the sandbox's main process exits 1: a Failed record with exit code 1, the pod back in service", async () => {
    const log = new ShapeLog("main process exits 1");
    const [pod] = await readyRealPool("trip-crash", 1, tripPool());
    const running = await runningSandbox("trip-crash", pod!, "sbx-crash", REAL_IMAGES.b);
    log.add(running);
    const tripped = await execIn(kc, running, "sandbox", ["/bin/sh", "-c", trip("1")]);
    expect(tripped, JSON.stringify(tripped)).toMatchObject({ exitCode: 0 });
    const idle = await backIdle("trip-crash", pod!.metadata!.name!, "sbx-crash", log);
    log.print();
    expect(idle.metadata?.uid).toBe(pod!.metadata?.uid);
    expect(await deps.history.get("sbx-crash")).toMatchObject({
      stopReason: "Failed",
      failureReason: "Error",
      exitCode: 1,
    });
  });

  it("an image missing from the registry: ImagePullBackOff in the status detail, then the startup timeout records and replaces the pod", async () => {
    const log = new ShapeLog("image missing from the registry");
    const missing = "registry.agentbox.test/agentbox/missing:1";
    const [pod] = await readyRealPool("pull", 1, realPoolSpec(1));
    const claimed = await claimSandbox(deps, pod!, {
      sandboxId: "sbx-missing",
      containerImages: { sandbox: missing },
      startupTimeoutSeconds: 30,
    });
    expect(claimed.ok, JSON.stringify(claimed)).toBe(true);
    const started = Date.now();
    // What the kubelet said and what the product wrote meanwhile.
    const kubeletSaid = new Set<string>();
    const productSaid = new Set<string>();
    const watch = (p: V1Pod) => {
      log.add(p);
      for (const s of p.status?.containerStatuses ?? [])
        if (s.state?.waiting?.reason) kubeletSaid.add(s.state.waiting.reason);
      const detail = p.metadata?.annotations?.[SANDBOX_STATUS_DETAIL_ANNOTATION];
      if (detail) productSaid.add((JSON.parse(detail) as { reason: string }).reason);
    };
    const diagnosed = await reconcileUntil(
      deps,
      t.ns,
      "pull",
      "ImagePullBackOff in the status detail",
      async () => {
        const p = await podNamed("pull", pod!.metadata!.name!);
        if (p) watch(p);
        const detail = p?.metadata?.annotations?.[SANDBOX_STATUS_DETAIL_ANNOTATION];
        const parsed = detail ? (JSON.parse(detail) as { reason: string; message: string }) : undefined;
        return parsed?.reason === "ImagePullBackOff" ? parsed : undefined;
      },
      60_000,
    );
    console.log(
      `[real-node-failures] ImagePullBackOff diagnosed ${Date.now() - started} ms after the claim: ${JSON.stringify(diagnosed)}`,
    );
    expect(diagnosed.message).toContain(missing);
    expect(phaseOf((await podNamed("pull", pod!.metadata!.name!))!)).toBe("starting");
    // The startup timeout, in real time: the sandbox is released as Failed, its pod replaced.
    const replaced = await reconcileUntil(
      deps,
      t.ns,
      "pull",
      "the timed-out pod replaced by a new idle one",
      async () => {
        const ps = await pods("pull");
        for (const p of ps) if (p.metadata?.uid === pod!.metadata?.uid) watch(p);
        return ps.length === 1 &&
          ps[0]!.metadata?.uid !== pod!.metadata?.uid &&
          phaseOf(ps[0]!) === "idle" &&
          isReady(ps[0]!)
          ? ps[0]
          : undefined;
      },
      120_000,
    );
    console.log(`[real-node-failures] startup timeout: replaced ${Date.now() - started} ms after the claim`);
    log.print();
    console.log(
      `[real-node-failures] waiting reasons: kubelet ${[...kubeletSaid].join(", ")}; status detail ${[...productSaid].join(", ")}`,
    );
    // Between pulls the kubelet backs off restarting the container (CrashLoopBackOff), though
    // nothing ran: the detail stays the pull error.
    expect([...productSaid]).not.toContain("CrashLoopBackOff");
    expect(replaced.spec?.nodeName).toBe(realNode().name);
    const record = await deps.history.get("sbx-missing");
    expect(record).toMatchObject({ stopReason: "Failed", failureReason: "StartupTimeout" });
    // The pull error, though the kubelet said CrashLoopBackOff between pulls (startBackOff).
    expect(record?.failureMessage).toMatch(/: (ImagePullBackOff|ErrImagePull): /);
    expect(record?.failureMessage).toContain(missing);
    // Time-based, not a timing assertion: the release cannot come before the limit.
    expect(Date.now() - started).toBeGreaterThanOrEqual(30_000);
  });
});
