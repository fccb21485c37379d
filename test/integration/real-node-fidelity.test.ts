import type { V1Container, V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type StatusShape, shapeDifferences, statusShape } from "../support/status-shape.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { execIn } from "./support/kube-exec.ts";
import { type WatchedPod, watchPodFrom } from "./support/pod-watch.ts";
import { onRealNode, REAL_IMAGES, realNode } from "./support/real-node.ts";

// The simulator kept honest: the same events (a start, a swap, a reset, the reset's restart on
// the pinned spelling, an OOM kill, pull failures) on the real node (kubelet, containerd, runc)
// and on a kwok node (infra/kwok/stages.yaml), each pod's settled status mapped to its shape
// (test/support/status-shape.ts: fields and forms, not values) and compared. The real statuses
// each step went through are printed, for the record.

const { kc, core } = kube();
let ns: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  realNode();
  ({ ns, cleanup } = await newNamespace(core, "fidelity"));
});
afterAll(async () => cleanup());

/**
 * REAL_ONLY are the fields the real kubelet reports and kwok does not: the container's resources
 * (spec's requests and limits, and what the node allocated), the user the image runs as and the
 * container's mounts (a simulator cannot know the image's user), and the pod's resources. The
 * product reads none of them (lib/ reads image, imageID, containerID, state, lastState, ready).
 */
const REAL_ONLY = [
  /^containers\.[^.]+\.(allocatedResources|resources|user|volumeMounts)(\.|$)/,
  /^(allocatedResources|resources)(\.|$)/,
];

/** MISSING is an image no registry holds; kwok fails any reference containing "unpullable". */
const MISSING = (tag: string) => REAL_IMAGES.idle.replace(/\/idle:1$/, `/unpullable:${tag}`);

const GRACE = 2;

/** twin is the pod twice: one on the real node, one on kwok (the default placement). */
function twin(base: string, containers: V1Container[], volumes?: { name: string; emptyDir: object }[]) {
  const names = { real: `${base}-real`, kwok: `${base}-kwok` };
  const create = async () => {
    for (const [where, name] of Object.entries(names)) {
      await core.createNamespacedPod({
        namespace: ns,
        body: {
          metadata: { name },
          spec: {
            ...(where === "real" ? onRealNode : {}),
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: GRACE,
            containers,
            ...(volumes ? { volumes } : {}),
          },
        },
      });
    }
  };
  return { names, create };
}

type Observed = WatchedPod;

/**
 * pair watches the real and the kwok pod, runs `act` once both watches are connected, and
 * waits until each pod's status settles as its predicate says.
 */
async function pair(
  names: { real: string; kwok: string },
  what: string,
  act: () => Promise<unknown>,
  real: (p: V1Pod) => boolean,
  kwok: (p: V1Pod) => boolean,
): Promise<{ real: Observed; kwok: Observed }> {
  const watching = [
    watchPodFrom(kc, ns, names.real, what, real),
    watchPodFrom(kc, ns, names.kwok, what, kwok),
  ];
  const [r, k] = await Promise.all(watching);
  // Both watches are connected: the act's effects cannot be missed. The results are awaited
  // with the act, so a watch that gives up while it runs is never an unobserved rejection.
  const [, a, b] = await Promise.all([act(), r!.result, k!.result]);
  return { real: a, kwok: b };
}

const main = (p: V1Pod) => p.status?.containerStatuses?.find((s) => s.name === "main");
const condition = (p: V1Pod, type: string) => p.status?.conditions?.find((c) => c.type === type)?.status;

/** runningNew: main runs in a container other than before's, ready, and the pod says so. */
const runningNew = (before?: V1Pod) => (p: V1Pod) => {
  const s = main(p);
  return (
    s?.state?.running !== undefined &&
    s.ready === true &&
    s.containerID !== undefined &&
    s.containerID !== main(before ?? {})?.containerID &&
    condition(p, "Ready") === "True" &&
    condition(p, "ContainersReady") === "True" &&
    p.status?.phase === "Running"
  );
};

const waitingFor = (reason: string) => (p: V1Pod) =>
  main(p)?.state?.waiting?.reason === reason && condition(p, "Ready") === "False";

async function setImage(name: string, image: string) {
  await core.patchNamespacedPod({
    name,
    namespace: ns,
    body: [{ op: "replace", path: "/spec/containers/0/image", value: image }],
  });
}

/** steps prints what a pod went through: the shape's changes from one version to the next. */
function steps(label: string, seen: V1Pod[], before?: V1Pod): string {
  const lines = [`${label}:`];
  let last: StatusShape = before ? statusShape(before, before) : {};
  for (const p of seen) {
    const now = statusShape(p, before);
    const changed = shapeDifferences(last, now, REAL_ONLY);
    if (changed.length > 0)
      lines.push(`  rv ${p.metadata?.resourceVersion}`, ...changed.map((c) => `    ${c}`));
    last = now;
  }
  return lines.join("\n");
}

/**
 * compare maps both settled statuses to shapes, prints them with the real node's steps, and
 * returns their differences outside REAL_ONLY (`path: real → kwok`).
 */
function compare(label: string, real: Observed, kwok: Observed, before?: { real: V1Pod; kwok: V1Pod }) {
  const r = statusShape(real.pod, before?.real);
  const k = statusShape(kwok.pod, before?.kwok);
  console.log(
    [
      `== ${label}: the real node's settled shape`,
      ...Object.entries(r).map(([p, f]) => `  ${p}: ${f}`),
      steps(`-- ${label}: the real node's steps`, real.seen, before?.real),
      steps(`-- ${label}: kwok's steps`, kwok.seen, before?.kwok),
    ].join("\n"),
  );
  return shapeDifferences(r, k, REAL_ONLY);
}

/** setImages changes both pods' main image: to `image`, or to what it makes of each pod. */
function setImages(
  names: { real: string; kwok: string },
  image: string | ((where: "real" | "kwok") => string),
) {
  return async () => {
    for (const where of ["real", "kwok"] as const)
      await setImage(names[where], typeof image === "string" ? image : image(where));
  };
}

describe("kwok's stages against the real node", () => {
  it("start, swap, reset, and the reset's restart on the pinned spelling give the same shapes", async () => {
    const { names, create } = twin("swap", [{ name: "main", image: REAL_IMAGES.idle }]);
    const started = await pair(names, "started", create, runningNew(), runningNew());
    expect(compare("start", started.real, started.kwok)).toEqual([]);

    // A claim: the idle container swapped for the sandbox's image in place.
    const swapped = await pair(
      names,
      "swapped",
      setImages(names, REAL_IMAGES.a),
      runningNew(started.real.pod),
      runningNew(started.kwok.pod),
    );
    expect(
      compare("swap", swapped.real, swapped.kwok, { real: started.real.pod, kwok: started.kwok.pod }),
    ).toEqual([]);

    // A release: back to the idle image, once the sandbox is in use (envd answers: a TERM that
    // reaches envd before it handles TERM ends it with 143/Error instead of 0/Completed).
    await until("envd in the swapped real container answers /health", 60_000, async () => {
      const ip = swapped.real.pod.status?.podIP;
      const res = await fetch(`http://${ip}:49983/health`, { signal: AbortSignal.timeout(2_000) });
      return res.status === 204;
    });
    const reset = await pair(
      names,
      "reset",
      setImages(names, REAL_IMAGES.idle),
      runningNew(swapped.real.pod),
      runningNew(swapped.kwok.pod),
    );
    expect(
      compare("reset", reset.real, reset.kwok, { real: swapped.real.pod, kwok: swapped.kwok.pod }),
    ).toEqual([]);

    // A pool without an idle image restarts the container on its own image, spelled with the
    // digest it runs (lib/lifecycle/image-reference.ts restartReference): `repo:tag@sha256:…`.
    const pinned = (where: "real" | "kwok") =>
      `${REAL_IMAGES.idle}@${main(reset[where].pod)?.imageID?.split("@")[1]}`;
    const restarted = await pair(
      names,
      "restarted on the pinned spelling",
      setImages(names, pinned),
      runningNew(reset.real.pod),
      runningNew(reset.kwok.pod),
    );
    expect(
      compare("restart on the pinned spelling", restarted.real, restarted.kwok, {
        real: reset.real.pod,
        kwok: reset.kwok.pod,
      }),
    ).toEqual([]);

    // And back to the tag: a new container again.
    const unpinned = await pair(
      names,
      "restarted on the tag",
      setImages(names, REAL_IMAGES.idle),
      runningNew(restarted.real.pod),
      runningNew(restarted.kwok.pod),
    );
    expect(
      compare("restart on the tag", unpinned.real, unpinned.kwok, {
        real: restarted.real.pod,
        kwok: restarted.kwok.pod,
      }),
    ).toEqual([]);
  }, 300_000);

  it("an OOM kill under a memory limit gives the same shapes: terminated, then restarted", async () => {
    // The real container allocates past its limit once (a marker on an emptyDir survives the
    // restart), then holds; kwok's is told to by annotation.
    const script = [
      "if [ -e /m/oomed ]; then exec /sbin/agentbox-hold; fi",
      "touch /m/oomed",
      "while [ ! -e /m/go ]; do sleep 0.1; done",
      `exec /usr/local/bin/node -e 'const a=[];for(;;)a.push(Buffer.alloc(1<<20,1))'`,
    ].join("; ");
    const { names, create } = twin(
      "oom",
      [
        {
          name: "main",
          image: REAL_IMAGES.a,
          command: ["/bin/sh", "-c", script],
          resources: { limits: { memory: "64Mi" } },
          volumeMounts: [{ name: "m", mountPath: "/m" }],
        },
      ],
      [{ name: "m", emptyDir: {} }],
    );
    const started = await pair(names, "started", create, runningNew(), runningNew());
    const kill = async () => {
      const real = started.real.pod;
      const touched = await execIn(kc, real, "main", ["/bin/touch", "/m/go"], 30_000);
      if (touched.exitCode !== 0) throw new Error(`touch /m/go in ${names.real}: ${touched.stderr}`);
      await core.patchNamespacedPod({
        name: names.kwok,
        namespace: ns,
        body: [{ op: "add", path: "/metadata/annotations", value: { "kwok.agentbox.dev/oom-kill": "main" } }],
      });
    };
    const terminated = (p: V1Pod) =>
      main(p)?.state?.terminated?.reason === "OOMKilled" && condition(p, "Ready") === "False";
    const killed = await pair(names, "OOM-killed", kill, terminated, terminated);
    const before = { real: started.real.pod, kwok: started.kwok.pod };
    expect(main(killed.real.pod)?.state?.terminated?.exitCode).toBe(137);
    expect(compare("OOM kill: terminated", killed.real, killed.kwok, before)).toEqual([]);
    const restarted = (b: V1Pod) => (p: V1Pod) =>
      main(p)?.lastState?.terminated?.reason === "OOMKilled" && runningNew(b)(p);
    const again = await pair(
      names,
      "running again",
      async () => {},
      restarted(started.real.pod),
      restarted(started.kwok.pod),
    );
    expect(compare("OOM kill: restarted", again.real, again.kwok, before)).toEqual([]);
  }, 180_000);

  it("an image missing from the registry gives the same shapes: ErrImagePull, then ImagePullBackOff", async () => {
    const { names, create } = twin("pull", [{ name: "main", image: MISSING("1") }]);
    const failing = await pair(
      names,
      "ErrImagePull",
      create,
      waitingFor("ErrImagePull"),
      waitingFor("ErrImagePull"),
    );
    expect(compare("pull failure: ErrImagePull", failing.real, failing.kwok)).toEqual([]);
    const backoff = await pair(
      names,
      "ImagePullBackOff",
      async () => {},
      waitingFor("ImagePullBackOff"),
      waitingFor("ImagePullBackOff"),
    );
    expect(compare("pull failure: ImagePullBackOff", backoff.real, backoff.kwok)).toEqual([]);
  }, 180_000);

  it("an in-place change to a missing image, and back, gives the same shapes", async () => {
    const { names, create } = twin("badswap", [{ name: "main", image: REAL_IMAGES.idle }]);
    const started = await pair(names, "started", create, runningNew(), runningNew());
    const before = { real: started.real.pod, kwok: started.kwok.pod };
    const failing = await pair(
      names,
      "ErrImagePull",
      setImages(names, MISSING("2")),
      waitingFor("ErrImagePull"),
      waitingFor("ErrImagePull"),
    );
    expect(compare("in-place pull failure: ErrImagePull", failing.real, failing.kwok, before)).toEqual([]);
    const backoff = await pair(
      names,
      "ImagePullBackOff",
      async () => {},
      waitingFor("ImagePullBackOff"),
      waitingFor("ImagePullBackOff"),
    );
    expect(compare("in-place pull failure: ImagePullBackOff", backoff.real, backoff.kwok, before)).toEqual(
      [],
    );

    const recovered = await pair(
      names,
      "recovered",
      setImages(names, REAL_IMAGES.idle),
      runningNew(backoff.real.pod),
      runningNew(backoff.kwok.pod),
    );
    expect(
      compare("recovery from the pull failure", recovered.real, recovered.kwok, {
        real: backoff.real.pod,
        kwok: backoff.kwok.pod,
      }),
    ).toEqual([]);
  }, 180_000);
});
