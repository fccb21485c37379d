import type { V1Secret } from "@kubernetes/client-node";
import { timingSafeEqual } from "hono/utils/buffer";
import { hashApiKey, type Tenant } from "../../lib/claims/api-keys.ts";
import {
  adminBinding,
  decodeSession,
  encodeSession,
  isSessionId,
  newSessionId,
  SESSION_TTL_MS,
  type SessionsSecret,
  sessionHash,
  sessionWrite,
} from "../../lib/console/sessions.ts";
import { isAlreadyExists, isConflict, isNotFound, orMissing } from "../../lib/kube/errors.ts";
import type { PacedRead } from "../../lib/util/paced-read.ts";
import { KEY_READ_SHARE_MS, tenantOfKeyHash } from "../api/authenticate.ts";
import type { HostDeps } from "../host-deps.ts";

/** CONSOLE_SESSIONS_SECRET names the Secret, next to the API keys, that holds the console's sessions. */
export const CONSOLE_SESSIONS_SECRET = "agentbox-console-sessions";

/** SESSION_READ_GAP_MS: at least this long between two reads of the sessions Secret per host. */
export const SESSION_READ_GAP_MS = 250;

/** ADMIN is the admin token's tenant: it sees every tenant's sandboxes, pools and templates. */
export const ADMIN: Tenant = { team: "*", user: "admin", admin: true };

/** WRITE_ATTEMPTS: how often a write of the sessions Secret is planned again after losing a race. */
const WRITE_ATTEMPTS = 10;

/** SessionDeps are what the sessions need: the API's (kube, clock, key checks), the admin token, the host's paced reads. */
export interface SessionDeps {
  api: HostDeps;
  adminToken: string;
  /** reads paces this host's etcd reads of the sessions Secret (SESSION_READ_GAP_MS; one per host or isolate). */
  reads: PacedRead<V1Secret | undefined>;
}

/**
 * ConsoleSessions keeps the console's sign-ins on the server, in one Secret in the API keys'
 * namespace: data maps the SHA-256 of each session ID to whom it stands for and when it ends, so
 * neither the Secret nor a cookie ever holds a credential. A session is checked on every request
 * against the Secret (a read shared for a second, else one begun after the request, paced per
 * host), and then against what it stands for: its API key must still be stored (revoked: signed
 * out within the key check's bound), the admin token must still hash the same. Writes add or
 * remove entries under the version they read and prune ended ones.
 */
export class ConsoleSessions {
  private readonly deps: SessionDeps;

  constructor(deps: SessionDeps) {
    this.deps = deps;
  }

  /**
   * start checks a credential (the admin token, compared in constant time, or an API key) and
   * opens a session for it: the new session ID (for the cookie), undefined for a bad credential,
   * "full" while MAX_CONSOLE_SESSIONS are live.
   */
  async start(credential: string): Promise<string | "full" | undefined> {
    if (!credential) return undefined;
    let subject: { key: string } | { admin: string };
    if (await timingSafeEqual(credential, this.deps.adminToken))
      subject = { admin: adminBinding(this.deps.adminToken) };
    else {
      const hash = await (this.deps.api.hashKey ?? hashApiKey)(credential);
      if (!(await tenantOfKeyHash(this.deps.api, hash))) return undefined;
      subject = { key: hash };
    }
    const id = newSessionId();
    const value = encodeSession({ subject, expiresAt: this.deps.api.now().getTime() + SESSION_TTL_MS });
    const written = await this.write({ add: { hash: sessionHash(id), value } });
    return written === "full" ? "full" : id;
  }

  /**
   * tenantOf is the tenant of the session a cookie names, undefined when it names none: not a
   * session ID's shape (an old cookie holding a raw key included), unknown, ended, or standing for
   * a key since revoked or an admin token since changed (those two are removed).
   */
  async tenantOf(cookie: string | undefined): Promise<Tenant | undefined> {
    if (!isSessionId(cookie)) return undefined;
    const hash = sessionHash(cookie);
    const stored = await this.find(hash);
    const session = stored ? decodeSession(stored) : undefined;
    if (!session) return undefined;
    if (session.expiresAt <= this.deps.api.now().getTime()) {
      await this.drop(hash);
      return undefined;
    }
    const { subject } = session;
    const tenant =
      "admin" in subject
        ? (await timingSafeEqual(subject.admin, adminBinding(this.deps.adminToken)))
          ? ADMIN
          : undefined
        : await tenantOfKeyHash(this.deps.api, subject.key);
    if (!tenant) await this.drop(hash);
    return tenant;
  }

  /**
   * drop removes a session that no longer counts, best effort: it signs nobody in either way, and
   * the next sign-in's write prunes what a failed removal left.
   */
  private async drop(hash: string): Promise<void> {
    await this.write({ remove: [hash] }).catch((e: unknown) =>
      this.deps.api.log.warn(
        { err: e instanceof Error ? e.message : String(e) },
        "console session not removed",
      ),
    );
  }

  /** end removes the session a cookie names (sign-out): its cookie, replayed, signs nobody in. */
  async end(cookie: string | undefined): Promise<void> {
    if (isSessionId(cookie)) await this.write({ remove: [sessionHash(cookie)] });
  }

  /** find is the stored session under hash: from a read under a second old, else one begun now. */
  private async find(hash: string): Promise<string | undefined> {
    const pick = (secret: V1Secret | undefined) =>
      secret?.data && Object.hasOwn(secret.data, hash) ? secret.data[hash] : undefined;
    const recent = this.deps.reads.recent(KEY_READ_SHARE_MS);
    const known = recent ? pick(recent.value) : undefined;
    if (known) return known;
    return pick(await this.deps.reads.get(() => this.read()));
  }

  private read(): Promise<V1Secret | undefined> {
    const namespace = this.deps.api.apiKeys.namespace;
    return orMissing(this.deps.api.kube.getSecret(namespace, CONSOLE_SESSIONS_SECRET, { cached: false }));
  }

  /**
   * write changes the sessions Secret as sessionWrite plans it on a fresh read (creating the
   * Secret when missing), again on a lost race; then this host forgets its last read, so nothing
   * read before the change answers for a session after it.
   */
  private async write(change: Parameters<typeof sessionWrite>[1]): Promise<"done" | "full"> {
    const { kube } = this.deps.api;
    const namespace = this.deps.api.apiKeys.namespace;
    try {
      for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
        const secret: SessionsSecret | undefined = await this.read();
        if (!secret) {
          if (!change.add) return "done";
          const created = await kube
            .createSecret(namespace, {
              apiVersion: "v1",
              kind: "Secret",
              metadata: {
                name: CONSOLE_SESSIONS_SECRET,
                namespace,
                labels: { "app.kubernetes.io/managed-by": "agentbox-functions" },
              },
              type: "Opaque",
              data: { [change.add.hash]: change.add.value },
            })
            .then(
              () => true,
              (e: unknown) => {
                if (isAlreadyExists(e)) return false;
                if (isNotFound(e))
                  throw new Error(
                    `no namespace ${namespace}: the console keeps its sessions there, next to the API keys`,
                  );
                throw e;
              },
            );
          if (created) return "done";
          continue;
        }
        const ops = sessionWrite(secret, change, this.deps.api.now().getTime());
        if (ops === "full" || ops === "none") return ops === "full" ? "full" : "done";
        try {
          await kube.patchSecret(namespace, CONSOLE_SESSIONS_SECRET, ops);
          return "done";
        } catch (e) {
          if (!isConflict(e)) throw e;
        }
      }
      throw new Error(`the Secret ${namespace}/${CONSOLE_SESSIONS_SECRET} kept changing; try again`);
    } finally {
      this.deps.reads.forget();
    }
  }
}
