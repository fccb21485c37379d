import type { V1Secret } from "@kubernetes/client-node";
import { KEY_MISS_GAP_MS, KEY_READ_SHARE_MS } from "../../functions/api/authenticate.ts";
import { SESSION_READ_GAP_MS } from "../../functions/console/console-sessions.ts";
import { importSealKeys, type SealKeys } from "../../lib/claims/sealing.ts";
import { PacedRead } from "../../lib/util/paced-read.ts";
import { SharedRead } from "../../lib/util/shared-read.ts";
import { D1HistoryStore, type D1Like } from "./d1-history.ts";
import { D1UsageStore } from "./d1-usage.ts";

/**
 * Isolate is what a Worker isolate builds once and its requests share: the D1 history and usage stores, the
 * key check's shared reads of the keys Secret (so a burst of requests costs the apiserver one read
 * per interval per isolate, as the Node host's requests share theirs), the console's paced reads
 * of its sessions Secret, and the sealing keys derived from the secret. Nothing in it is a source
 * of truth.
 */
export interface Isolate {
  history: D1HistoryStore;
  /** usage keeps the sandboxes' resource-use samples in the same D1 database. */
  usage: D1UsageStore;
  keyReads: PacedRead<V1Secret | undefined>;
  keyCacheReads: SharedRead<V1Secret | undefined>;
  /** consoleSessionReads paces the console's reads of its sessions Secret. */
  consoleSessionReads: PacedRead<V1Secret | undefined>;
  sealKeys(secret: string): Promise<SealKeys>;
}

/**
 * isolates holds each isolate's Isolate, keyed by its D1 binding (workerd passes the same env and
 * bindings to every request of an isolate): a WeakMap, so a binding that goes takes its state along.
 */
const isolates = new WeakMap<D1Like, Isolate>();

/** isolateOf is the isolate's shared state for this D1 binding, built at its first request. */
export function isolateOf(db: D1Like): Isolate {
  const known = isolates.get(db);
  if (known) return known;
  let sealed: { secret: string; keys: Promise<SealKeys> } | undefined;
  const isolate: Isolate = {
    history: new D1HistoryStore(db),
    usage: new D1UsageStore(db),
    keyReads: new PacedRead(KEY_MISS_GAP_MS, () => Date.now()),
    keyCacheReads: new SharedRead(KEY_READ_SHARE_MS, () => Date.now()),
    consoleSessionReads: new PacedRead(SESSION_READ_GAP_MS, () => Date.now()),
    sealKeys: (secret) => {
      if (sealed?.secret !== secret) sealed = { secret, keys: importSealKeys(secret) };
      return sealed.keys;
    },
  };
  isolates.set(db, isolate);
  return isolate;
}
