import { reachedVersion, resourceVersionOf } from "../../lib/kube/resource-version.ts";
import type { WatchEvent } from "../../lib/kube/transport.ts";
import { retryDelay } from "../../lib/util/backoff.ts";

/** WATCH_SECONDS is how long one watch lasts before the apiserver ends it and it is reopened. */
export const WATCH_SECONDS = 120;

/** QUICK_END_MS: a watch that ends sooner than this is paced before it is opened again. */
const QUICK_END_MS = 1000;

/** LIST_PAGE is the page size of an informer's list. */
const LIST_PAGE = 500;

import {
  type Change,
  changeOf,
  type InformerDeps,
  type InformerOptions,
  type InformerSource,
  keyOf,
  pause,
  type Subscriber,
} from "./informer-contract.ts";

export type {
  Change,
  InformerDeps,
  InformerOptions,
  InformerSource,
  ListPage,
  Subscriber,
} from "./informer-contract.ts";
export { pause } from "./informer-contract.ts";

/**
 * Informer is the one list → watch → re-list loop of this control plane, as controller-runtime's
 * informers are: it lists the selection (page by page), watches from that list's version with
 * bookmarks, resumes from the last version it heard when a watch ends, lists again when the
 * apiserver cannot go on from there (410 Gone), paces a watch that ends at once or fails (never a
 * tight loop against an apiserver that refuses it), and tells `caughtUp(version)` when it has
 * passed a write. Every watch-fed cache of a host (the tick's pool pods view, the idle feed, the
 * creates' claim followers, the router's routes) subscribes to one. What it holds is a hint:
 * every write a decision makes from it is preconditioned on what the apiserver holds.
 */
export class Informer<T> {
  private readonly subscribers = new Set<Subscriber<T>>();
  /** store holds the last change of each object (options.keep), by "namespace/name". */
  private readonly store = new Map<string, Change<T>>();
  private readonly waiters = new Map<(passed: boolean) => void, string>();
  private readonly controller = new AbortController();
  private cursor: string | undefined;
  private isSynced = false;
  private asked = false;
  private markSynced: () => void = () => {};
  /** synced resolves once the first list is in (or the informer closed first). */
  readonly firstSync = new Promise<void>((resolve) => {
    this.markSynced = resolve;
  });

  private readonly deps: InformerDeps;
  private readonly source: InformerSource<T>;
  private readonly options: InformerOptions;

  /**
   * The informer starts at once. `first` is subscribed before anything runs: with no list first
   * (`from`, `replay`) its watch then opens within this call, and the subscriber hears every event.
   */
  constructor(
    deps: InformerDeps,
    source: InformerSource<T>,
    options: InformerOptions = {},
    first?: Subscriber<T>,
  ) {
    this.deps = deps;
    this.source = source;
    this.options = options;
    this.cursor = options.from;
    if (options.from !== undefined) {
      this.isSynced = true;
      this.markSynced();
    }
    if (first) this.subscribers.add(first);
    if (!source.list && !options.replay)
      throw new Error(`informer ${source.name} needs a list: only a replaying informer has none`);
    // An informer whose loop died is closed, so nobody waits on it (caughtUp, a feed's first list).
    this.run(first !== undefined)
      .catch((e: unknown) =>
        this.deps.log.warn({ informer: source.name, err: String(e) }, "informer stopped"),
      )
      .finally(() => this.close());
  }

  /** name is the source's. */
  get name(): string {
    return this.source.name;
  }

  /** synced: the informer holds a list (or follows from a version it was given) and has not lost its place since. */
  get synced(): boolean {
    return this.isSynced;
  }

  /** version is the last version the informer heard (a list's, an event's or a bookmark's). */
  get version(): string | undefined {
    return this.cursor;
  }

  /** closed: the informer was closed (or closed itself: reopen said no). */
  get closed(): boolean {
    return this.controller.signal.aborted;
  }

  /** size is the number of objects held (options.keep). */
  get size(): number {
    return this.store.size;
  }

  /**
   * subscribe adds a subscriber; one that comes after a list is handed what the informer holds
   * (parsing it: a change that cannot be read makes the informer list again). It returns the
   * unsubscribe.
   */
  subscribe(subscriber: Subscriber<T>): () => void {
    this.subscribers.add(subscriber);
    if (this.isSynced && this.options.keep !== false && this.options.from === undefined) {
      const held = this.held();
      if (held) void Promise.resolve(subscriber.listed?.(held, this.cursor ?? "")).catch(this.listedFailed);
    }
    return () => {
      this.subscribers.delete(subscriber);
    };
  }

  /** objects are the objects held (parsed), or undefined while not synced or when one cannot be read. */
  held(): T[] | undefined {
    if (!this.isSynced) return undefined;
    try {
      return [...this.store.values()].map((c) => c.object);
    } catch (e) {
      this.relist(`a held event cannot be read: ${String(e)}`);
      return undefined;
    }
  }

  /**
   * relist makes the informer list again: at once when between watches, else at the watch's next
   * event. A subscriber asks it when it cannot read an event (the informer is out of step until then).
   */
  relist(why: string): void {
    this.deps.log.warn({ informer: this.source.name, why }, "informer lists again");
    this.asked = true;
    this.isSynced = false;
  }

  /**
   * caughtUp resolves true once the informer has heard `version` or a later one (at once if it
   * has), or false after withinMs, for a version that cannot be ordered, or when it closes. A pool
   * run an audit event triggered waits on it for the version the event reported, so it plans on
   * a view that holds that write (ADR 0039).
   */
  caughtUp(version: string, withinMs: number): Promise<boolean> {
    if (reachedVersion(this.cursor, version)) return Promise.resolve(true);
    if (resourceVersionOf(version) === undefined || this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter = (passed: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        resolve(passed);
      };
      const timer = setTimeout(() => waiter(false), withinMs);
      this.waiters.set(waiter, version);
    });
  }

  /** close stops the watch; no caughtUp waits on. */
  close(): void {
    this.isSynced = false;
    this.controller.abort();
    this.markSynced();
    for (const waiter of this.waiters.keys()) waiter(false);
  }

  private readonly listedFailed = (e: unknown) =>
    this.deps.log.warn({ informer: this.source.name, err: String(e) }, "a subscriber could not take a list");

  /** passed settles the caughtUp waiters whose version the informer has now heard. */
  private passed(): void {
    for (const [waiter, version] of this.waiters) if (reachedVersion(this.cursor, version)) waiter(true);
  }

  private count(kind: "events" | "lists" | "watches", label: string, key: "type" | "cause" | "end"): void {
    this.deps.metrics?.informers[kind].inc({ informer: this.source.name, [key]: label } as never);
  }

  /** list reads the selection page by page (one item with onlyVersion) and hands it to every subscriber. */
  private async list(cause: string): Promise<void> {
    this.count("lists", cause, "cause");
    const list = this.source.list;
    if (!list) throw new Error(`informer ${this.source.name} has no list`);
    const items: T[] = [];
    let next: string | undefined;
    let version = "";
    do {
      const page = await list({
        limit: this.options.onlyVersion ? 1 : LIST_PAGE,
        ...(next ? { continue: next } : {}),
      });
      if (!this.options.onlyVersion) items.push(...page.items);
      version ||= page.resourceVersion;
      next = this.options.onlyVersion ? undefined : page.continue;
    } while (next);
    // Closed while it listed: nobody hears a list of a closed informer, nor may it say it is in step.
    if (this.closed) return;
    this.store.clear();
    if (this.options.keep !== false && !this.options.onlyVersion)
      for (const object of items) {
        const meta = (
          object as { metadata?: { name?: string; namespace?: string; resourceVersion?: string } }
        ).metadata;
        const change: Change<T> = {
          deleted: false,
          namespace: meta?.namespace ?? "",
          name: meta?.name ?? "",
          version: meta?.resourceVersion ?? "",
          object,
        };
        this.store.set(keyOf(change), change);
      }
    this.cursor = version;
    this.asked = false;
    for (const subscriber of [...this.subscribers]) await subscriber.listed?.(items, version);
    this.isSynced = true;
    this.markSynced();
    this.passed();
  }

  /** onEvent files one event and hands it on; true stops the watch (a relist was asked). */
  private onEvent(event: WatchEvent, state: { end: "stopped" | "gone" | "failed" | "ended" }): boolean {
    this.count("events", event.type, "type");
    if (event.type === "ERROR") {
      state.end = "gone";
      // Out of step the moment the apiserver says so, not once the watch has closed.
      this.isSynced = false;
      return true;
    }
    for (const subscriber of this.subscribers) subscriber.heard?.();
    const change = changeOf<T>(event);
    this.cursor = change.version || this.cursor;
    if (event.type !== "BOOKMARK") {
      const key = keyOf(change);
      if (this.options.keep !== false) {
        this.store.delete(key);
        if (!change.deleted) this.store.set(key, change);
      }
      for (const subscriber of [...this.subscribers]) {
        try {
          subscriber.changed(change);
        } catch (e) {
          // The cursor is past this event already: only a list can give the subscriber what it missed.
          this.relist(`a subscriber could not take an event: ${String(e)}`);
        }
      }
    }
    if (this.waiters.size > 0) this.passed();
    if (!this.asked) return false;
    state.end = "stopped";
    return true;
  }

  /** watchOnce runs one watch from the cursor and says how it ended. */
  private async watchOnce(signal: AbortSignal): Promise<"stopped" | "gone" | "failed" | "ended"> {
    const state: { end: "stopped" | "gone" | "failed" | "ended" } = { end: "ended" };
    await this.deps
      .watch(
        {
          method: "GET",
          path: this.source.path,
          query: {
            ...this.source.selector,
            resourceVersion: this.cursor,
            allowWatchBookmarks: "true",
            timeoutSeconds: String(this.source.timeoutSeconds ?? WATCH_SECONDS),
          },
        },
        (event) => this.onEvent(event, state),
        signal,
      )
      .catch((e: unknown) => {
        if (!signal.aborted)
          this.deps.log.debug({ informer: this.source.name, err: String(e) }, "informer's watch failed");
        state.end = "failed";
      });
    this.count("watches", signal.aborted ? "closed" : state.end, "end");
    return state.end;
  }

  /**
   * replayed readies a watch with no version: the subscribers forget what the last one said. It
   * returns a promise only when one of them does (so a replaying informer's first watch opens
   * within its constructor).
   */
  private replayed(): Promise<void> | undefined {
    this.cursor = undefined;
    this.asked = false;
    this.store.clear();
    const pending = [...this.subscribers].map((s) => s.listed?.([], "")).filter((r) => r instanceof Promise);
    this.isSynced = true;
    this.markSynced();
    return pending.length ? Promise.all(pending).then(() => {}) : undefined;
  }

  /** outOfStep marks the informer out of step and tells the subscribers. */
  private outOfStep(why: "gone" | "failed"): void {
    this.isSynced = false;
    for (const subscriber of [...this.subscribers]) subscriber.outOfStep?.(why);
  }

  /** run lists (unless it follows from a version), then watches; 410 and asked relists list again. */
  private async run(subscribed: boolean): Promise<void> {
    const { signal } = this.controller;
    let quick = 0;
    let cause = this.options.from === undefined && !this.options.replay ? "start" : "";
    // With no list first, the watch opens on the next microtask: the subscribers added right
    // after the constructor hear its first events even from a transport that answers at once.
    if (cause === "" && !subscribed) await Promise.resolve();
    while (!signal.aborted) {
      if (this.options.reopen && !this.options.reopen()) break;
      // A replaying informer lists inside each watch: a 410 or a relist asked just reopens it.
      if (!this.options.replay && (cause || this.asked)) {
        try {
          await this.list(cause || "asked");
          cause = "";
        } catch (e) {
          this.deps.log.debug(
            { informer: this.source.name, err: String(e) },
            "informer could not list; trying again",
          );
          this.markSynced(); // whoever waits for the first list goes on without it
          await pause(retryDelay(quick++), signal);
          continue;
        }
      }
      const replaying = this.options.replay ? this.replayed() : undefined;
      if (replaying) await replaying;
      // A subscriber may close the informer on what the list said (a followed pod is done).
      if (signal.aborted) break;
      const opened = Date.now();
      const end = await this.watchOnce(signal);
      if (signal.aborted) break;
      if (end === "gone" && this.options.replay) this.outOfStep("gone");
      else if (end === "gone") {
        cause = "gone";
        this.outOfStep("gone");
      } else if (end === "failed" && this.options.relistAfterFailure) {
        cause = "failed";
        this.outOfStep("failed");
      }
      quick = end === "failed" || Date.now() - opened < QUICK_END_MS ? quick + 1 : 0;
      if (quick > 0) await pause(retryDelay(quick - 1), signal);
    }
    this.close();
  }
}
