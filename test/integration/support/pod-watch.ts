import { type KubeConfig, type V1Pod, Watch } from "@kubernetes/client-node";

/** WatchedPod is the settled version of a pod and every version the watch saw on the way. */
export interface WatchedPod {
  pod: V1Pod;
  seen: V1Pod[];
}

/**
 * watchPodFrom watches one pod (which may not exist yet) and resolves once the watch is
 * connected, with the promise of the first version for which `settled` holds. A change made
 * after it resolves cannot be missed: the real kubelet writes one change in several patches,
 * and kwok's intermediate states (OOMKilled before the restart) last only its delays.
 */
export async function watchPodFrom(
  kc: KubeConfig,
  ns: string,
  name: string,
  what: string,
  settled: (p: V1Pod) => boolean,
  timeoutMs = 90_000,
): Promise<{ result: Promise<WatchedPod> }> {
  const seen: V1Pod[] = [];
  let req: { abort: () => void } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  let done!: (o: WatchedPod) => void;
  let fail!: (e: unknown) => void;
  const result = new Promise<WatchedPod>((resolve, reject) => {
    done = resolve;
    fail = reject;
  });
  const finish = (e?: unknown) => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    req?.abort();
    const last = seen.at(-1);
    if (e === undefined && last) done({ pod: last, seen });
    else fail(e ?? new Error(`the watch on pod ${ns}/${name} ended`));
  };
  req = await new Watch(kc).watch(
    `/api/v1/namespaces/${ns}/pods`,
    { fieldSelector: `metadata.name=${name}` },
    (type, pod: V1Pod) => {
      if (type === "DELETED" || ended) return;
      seen.push(pod);
      if (settled(pod)) finish();
    },
    (err) => {
      if (err && (err as Error).name !== "AbortError") finish(err);
    },
  );
  if (ended) req.abort();
  timer = setTimeout(
    () =>
      finish(
        new Error(
          `timed out after ${timeoutMs} ms waiting for pod ${ns}/${name}: ${what}; last status: ${JSON.stringify(seen.at(-1)?.status)}`,
        ),
      ),
    timeoutMs,
  );
  return { result };
}
