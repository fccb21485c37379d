// The console's server-side sessions (issue #35, point 6): the cookie holds a random session ID,
// never a credential; the sessions Secret holds only the ID's SHA-256, with whom it stands for (an
// API key's hash, or the admin token bound by a hash) and when it ends. Pure: WebCrypto's random
// bytes, and the synchronous SHA-256 that runs in every host.
import * as v from "valibot";
import type { JsonPatchOp } from "../kube/json-patch.ts";
import { escapePointer } from "../kube/json-patch.ts";
import { sha256Hex } from "../util/sha256.ts";
import { rfc3339 } from "../util/time.ts";

/** SESSION_TTL_MS: a console session ends 12 hours after sign-in, whatever its use. */
export const SESSION_TTL_MS = 12 * 3600 * 1000;

/** MAX_CONSOLE_SESSIONS bounds the live sessions (the Secret stays far below its 1 MiB). */
export const MAX_CONSOLE_SESSIONS = 2000;
/** MAX_SESSIONS_PER_SUBJECT bounds one key's (or the admin's) live sessions: its oldest ends first. */
export const MAX_SESSIONS_PER_SUBJECT = 20;

/** SESSION_ID_BYTES: 32 random bytes (256 bits), 43 characters of unpadded base64url. */
const SESSION_ID_BYTES = 32;

/** SessionSubject is whom a session stands for: an API key (by its SHA-256) or the admin token. */
export type SessionSubject = { key: string } | { admin: string };

/** Session is one stored session: its subject and when it ends (ms since the epoch). */
export interface Session {
  subject: SessionSubject;
  expiresAt: number;
}

/** newSessionId makes a session ID: 256 bits from crypto.getRandomValues, unpadded base64url. */
export function newSessionId(): string {
  let binary = "";
  for (const b of crypto.getRandomValues(new Uint8Array(SESSION_ID_BYTES))) binary += String.fromCharCode(b);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/**
 * isSessionId says whether a cookie value has a session ID's shape (43 base64url characters):
 * anything else (an old cookie holding a raw key, garbage) is refused before any read.
 */
export function isSessionId(value: string | undefined): value is string {
  return value !== undefined && /^[A-Za-z0-9_-]{43}$/.test(value);
}

/** sessionHash is the name a session is stored under: the SHA-256 of its ID, in hex. */
export function sessionHash(id: string): string {
  return sha256Hex(id);
}

/**
 * adminBinding is what an admin session stores of the admin token: a hash of it under this
 * purpose's own prefix. A session holds while the host's admin token hashes the same, so changing
 * the token ends every admin session; the hash never equals an API key's.
 */
export function adminBinding(adminToken: string): string {
  return sha256Hex(`agentbox-console-admin\n${adminToken}`);
}

const Hex64 = v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/));
const Stored = v.object({
  key: v.optional(Hex64),
  admin: v.optional(Hex64),
  expires: v.pipe(v.string(), v.isoTimestamp()),
});

/** encodeSession renders a session as the Secret's data holds it: base64 of its JSON. */
export function encodeSession(session: Session): string {
  return btoa(JSON.stringify({ ...session.subject, expires: rfc3339(new Date(session.expiresAt)) }));
}

/**
 * decodeSession reads a stored session back; undefined when it is not base64 JSON, names both or
 * neither subject, or has no valid end: a garbled entry signs nobody in.
 */
export function decodeSession(base64: string): Session | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(atob(base64));
  } catch {
    return undefined;
  }
  const parsed = v.safeParse(Stored, raw);
  if (!parsed.success) return undefined;
  const { key, admin, expires } = parsed.output;
  const expiresAt = Date.parse(expires);
  if (Number.isNaN(expiresAt)) return undefined;
  if (key !== undefined && admin === undefined) return { subject: { key }, expiresAt };
  if (admin !== undefined && key === undefined) return { subject: { admin }, expiresAt };
  return undefined;
}

/** SessionsSecret is the part of the sessions Secret a plan reads. */
export interface SessionsSecret {
  metadata?: { resourceVersion?: string };
  data?: Record<string, string>;
}

/**
 * sessionWrite plans one write of the sessions Secret: add `add` (hash → stored session) and
 * remove `remove`, and every entry that has ended or is garbled, tested against the version read
 * (a write that raced another is refused and planned again on a fresh read). "full" when the
 * addition would make more than MAX_CONSOLE_SESSIONS live sessions; "none" when nothing changes.
 */
export function sessionWrite(
  secret: SessionsSecret,
  change: { add?: { hash: string; value: string }; remove?: readonly string[] },
  now: number,
): JsonPatchOp[] | "full" | "none" {
  const data = secret.data ?? {};
  const removed = new Set(change.remove ?? []);
  const gone = Object.entries(data)
    .filter(([hash, value]) => removed.has(hash) || ended(value, now))
    .map(([hash]) => hash);
  if (change.add) gone.push(...crowded(data, new Set(gone), change.add.value, now));
  if (change.add && Object.keys(data).length - gone.length >= MAX_CONSOLE_SESSIONS) return "full";
  if (gone.length === 0 && !change.add) return "none";
  return [
    { op: "test", path: "/metadata/resourceVersion", value: secret.metadata?.resourceVersion ?? "" },
    ...(secret.data ? [] : [{ op: "add" as const, path: "/data", value: {} }]),
    ...gone.map((hash): JsonPatchOp => ({ op: "remove", path: `/data/${escapePointer(hash)}` })),
    ...(change.add
      ? [{ op: "add" as const, path: `/data/${escapePointer(change.add.hash)}`, value: change.add.value }]
      : []),
  ];
}

/**
 * crowded are the live sessions of the added session's subject (the same key, or the admin) past
 * the newest MAX_SESSIONS_PER_SUBJECT - 1, oldest first: a sign-in ends that subject's oldest
 * session instead of filling the Secret, so one key signing in over and over locks nobody out.
 */
function crowded(
  data: Readonly<Record<string, string>>,
  leaving: ReadonlySet<string>,
  added: string,
  now: number,
): string[] {
  const subject = JSON.stringify(decodeSession(added)?.subject);
  const own = Object.entries(data)
    .map(([hash, value]) => ({ hash, session: decodeSession(value) }))
    .filter(
      ({ hash, session }) =>
        !leaving.has(hash) &&
        session &&
        session.expiresAt > now &&
        JSON.stringify(session.subject) === subject,
    )
    .sort((a, b) => (a.session?.expiresAt ?? 0) - (b.session?.expiresAt ?? 0));
  return own.slice(0, Math.max(0, own.length - (MAX_SESSIONS_PER_SUBJECT - 1))).map((o) => o.hash);
}

/** ended says whether a stored session no longer counts: garbled, or past its end. */
function ended(value: string, now: number): boolean {
  const session = decodeSession(value);
  return !session || session.expiresAt <= now;
}
