import type { V1Secret } from "@kubernetes/client-node";
import { importSealKeys, type SealKeys } from "../../lib/sandboxes/sealing.ts";
import { SharedRead } from "../../lib/util/shared-read.ts";
import { D1HistoryStore, type D1Like } from "./d1-history.ts";

/**
 * KEY_READ_SHARE_MS: how long one read of the keys Secret (cached or etcd) serves an isolate's
 * key checks, as on the Node host (a revoked key stops working within about two seconds, ADR 0020).
 */
const KEY_READ_SHARE_MS = 1000;

/**
 * Isolate is what a Worker isolate builds once and its requests share: the D1 history store, the
 * key check's shared reads of the keys Secret (so a burst of requests costs the apiserver one read
 * per interval per isolate, as the Node host's requests share theirs), and the sealing keys
 * derived from the secret. Nothing in it is a source of truth.
 */
export interface Isolate {
  history: D1HistoryStore;
  keyReads: SharedRead<V1Secret | undefined>;
  keyCacheReads: SharedRead<V1Secret | undefined>;
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
    keyReads: new SharedRead(KEY_READ_SHARE_MS, () => Date.now()),
    keyCacheReads: new SharedRead(KEY_READ_SHARE_MS, () => Date.now()),
    sealKeys: (secret) => {
      if (sealed?.secret !== secret) sealed = { secret, keys: importSealKeys(secret) };
      return sealed.keys;
    },
  };
  isolates.set(db, isolate);
  return isolate;
}
