import type { SandboxSnapshot } from "../../lib/crd/sandbox-snapshot.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import type { HostDeps } from "../host-deps.ts";

/** POLL_MS are the pauses between reads of a snapshot being waited on (the last one repeats). */
const POLL_MS = [100, 150, 250, 400, 500] as const;

/**
 * waitForSnapshot reads a SandboxSnapshot until `done` says so (undefined is "deleted"), the time is
 * up or the host stops: the snapshot last read, or "timeout". Reads are quorum GETs a few times a
 * second; a pause or resume waits seconds, so a watch per caller would cost more than it saves.
 */
export async function waitForSnapshot(
  deps: Pick<HostDeps, "kube" | "stopping">,
  namespace: string,
  name: string,
  done: (s: SandboxSnapshot | undefined) => boolean,
  timeoutMs: number,
): Promise<{ snapshot: SandboxSnapshot | undefined } | "timeout"> {
  const deadline = performance.now() + timeoutMs;
  for (let i = 0; ; i++) {
    const s = await deps.kube.getSnapshot(namespace, name).catch((e: unknown) => {
      if (isNotFound(e)) return undefined;
      throw e;
    });
    if (done(s)) return { snapshot: s };
    const left = deadline - performance.now();
    if (left <= 0 || deps.stopping.aborted) return "timeout";
    const pause = Math.min(left, POLL_MS[Math.min(i, POLL_MS.length - 1)] ?? 500);
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}
