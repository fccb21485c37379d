import { type KubeConfig, Watch } from "@kubernetes/client-node";
import { fetchJson } from "./support.ts";

/** Following is a collection being followed; stop ends it (no relist after). */
export interface Following {
  stop(): void;
}

/**
 * follow lists a collection, then watches it from the list's version, and starts over with a
 * fresh list whenever the watch ends (the client's inactivity timeout, an apiserver restart),
 * until stop. Resolves once the first list is in. Benchmarks read pod and pool states from it
 * (no polling, so the figures cost the apiserver one watch each).
 */
export async function follow<T>(
  kc: KubeConfig,
  path: string,
  labelSelector: string | undefined,
  onList: (items: T[]) => void,
  onEvent: (type: string, obj: T) => void,
): Promise<Following> {
  const watch = new Watch(kc);
  const aborts: AbortController[] = [];
  let stopped = false;
  const query = labelSelector ? `?labelSelector=${encodeURIComponent(labelSelector)}` : "";
  const list = async () =>
    (await fetchJson(kc, "GET", `${path}${query}`)).body as {
      metadata: { resourceVersion: string };
      items: T[];
    };
  const round = async (): Promise<void> => {
    if (stopped) return;
    const first = await list();
    onList(first.items);
    const controller = await watch.watch(
      path,
      { resourceVersion: first.metadata.resourceVersion, ...(labelSelector ? { labelSelector } : {}) },
      onEvent,
      () => {
        if (!stopped) round().catch((e: unknown) => console.error(`[bench] relist failed: ${String(e)}`));
      },
    );
    aborts.push(controller);
  };
  await round();
  return {
    stop: () => {
      stopped = true;
      for (const a of aborts) a.abort();
    },
  };
}
