/**
 * commit-check.ts decides what a snapshot commit on the envd stand-in takes (pods.ts commit), so
 * the next sandbox's files are never committed as this one's: the container a pause names must
 * be the one the stand-in's envd served (the instance its /init met) and the one serving the pod
 * IP now (the apiserver's answer). Pure: the caller reads both.
 */
import type { Instance } from "./pods.ts";

/** CommitSource is the container a commit expects to find serving the pod IP (design: SnapshotSource). */
export interface CommitSource {
  podUID: string;
  container: string;
  containerID: string;
}

/**
 * CommitTake: the envd's files; an empty snapshot (another container of the pod: the stand-in
 * holds files of the envd's container only, so the other one is a container without changes);
 * or none, with why its container is gone.
 */
export type CommitTake = { take: "files" } | { take: "empty" } | { take: "none"; reason: string };

/**
 * commitTake decides from the envd held for ip (its instance id; absent: never served) and the
 * instance serving ip now (undefined: none, or unknown). checked false (no apiserver to ask)
 * takes the held envd's files as they are.
 */
export function commitTake(
  ip: string,
  held: { instance: string | undefined } | undefined,
  live: Instance | undefined,
  source: CommitSource,
  checked: boolean,
): CommitTake {
  if (!held) return { take: "none", reason: `the envd stand-in never served pod IP ${ip}` };
  if (!checked) return { take: "files" };
  if (!live || live.id.split("/")[0] !== source.podUID)
    return { take: "none", reason: `pod IP ${ip} is not served by pod uid ${source.podUID} now` };
  if (live.container !== undefined && live.container !== source.container) return { take: "empty" };
  const want = `${source.podUID}/${source.containerID}`;
  if (live.id !== want || held.instance !== want)
    return {
      take: "none",
      reason: `pod IP ${ip} was served by container instance ${held.instance ?? "(unknown)"}, now by ${live.id}`,
    };
  return { take: "files" };
}
