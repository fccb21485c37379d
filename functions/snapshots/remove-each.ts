import type { Log } from "../../lib/util/log.ts";
import { type Committer, DeletesDisabled } from "./committer.ts";

/** RemoveKind says what removeEach deletes: single images, or every image of repositories. */
export type RemoveKind = "image" | "repository";

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * removeEach deletes each image, or empties each repository, by key, each within `ms` (and the
 * caller's signal, whose abort it throws); it answers the keys it could not, to be tried again.
 * A registry that allows no deletes (DeletesDisabled) fails no key: no retry would change it, so
 * the item is forgotten (it stays in the registry) and an error says why, naming the setting.
 */
export async function removeEach(
  committer: Committer,
  log: Log,
  what: RemoveKind,
  items: Record<string, string>,
  signal: AbortSignal,
  ms: number,
): Promise<string[]> {
  const failed: string[] = [];
  const noun = what === "image" ? "an image" : "a repository's images";
  for (const [key, item] of Object.entries(items)) {
    const within = AbortSignal.any([signal, AbortSignal.timeout(ms)]);
    try {
      if (what === "image") await committer.remove(item, within);
      else await committer.removeRepository(item, within);
    } catch (e) {
      if (signal.aborted) throw e;
      if (e instanceof DeletesDisabled) {
        log.error({ [what]: item, err: message(e) }, `snapshot agent cannot delete ${noun}`);
        continue;
      }
      log.warn({ [what]: item, err: message(e) }, `snapshot agent could not delete ${noun}`);
      failed.push(key);
    }
  }
  return failed;
}
