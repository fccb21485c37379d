// What the /v1 API shows of a sandbox. A sandbox is a claimed pod: everything about it (owner,
// times, images, caller metadata, why it is not running) is read from the pod's labels,
// annotations, spec and status, so any host answers from one fresh read with no other state.
import type { V1Pod } from "@kubernetes/client-node";
import { SandboxStatusDetail } from "../crd/annotations.ts";
import {
  CLAIMED_AT_ANNOTATION,
  END_AT_ANNOTATION,
  FAILURE_MESSAGE_ANNOTATION,
  FAILURE_REASON_ANNOTATION,
  IDLE_TIMEOUT_ANNOTATION,
  SANDBOX_METADATA_ANNOTATION,
  SANDBOX_PHASE,
  SANDBOX_POOL_LABEL,
  SANDBOX_STATUS_DETAIL_ANNOTATION,
  STARTED_AT_ANNOTATION,
  STARTUP_TIMEOUT_ANNOTATION,
  TEAM_LABEL,
  USER_LABEL,
} from "../crd/keys.ts";
import { parseWith } from "../crd/parse-with.ts";
import { ENVD_PORT, sandboxHost } from "../data-plane/sandbox-host.ts";
import { networkOf, type SandboxNetwork } from "../egress/network.ts";
import { apiPhaseOf, sandboxIdOf } from "../lifecycle/api-phase.ts";
import { buildStatusDetail } from "../lifecycle/diagnostics.ts";
import { sandboxPhaseOf } from "../lifecycle/phase-label.ts";
import type { Tenant } from "./api-keys.ts";

/**
 * SandboxViewPhase is a sandbox's phase: a claimed pod's (idle pods are not sandboxes), or
 * "paused" for a paused sandbox, which holds no pod (lib/claims/paused-view.ts).
 */
export type SandboxViewPhase = "starting" | "running" | "stopping" | "failed" | "paused";

/** SandboxView is one sandbox as the /v1 API returns it. */
export interface SandboxView {
  sandboxId: string;
  namespace: string;
  /** pool is the SandboxPool's name (its namespace is `namespace`). */
  pool: string;
  /** pod is the name of the pod the sandbox runs in; "" for a paused sandbox (it holds none). */
  pod: string;
  phase: SandboxViewPhase;
  team?: string;
  user?: string;
  /** claimedAt and startedAt are RFC 3339, as the annotations hold them. */
  claimedAt?: string;
  startedAt?: string;
  /** images maps container name → image of the pod spec (what runs, or is being pulled). */
  images: Record<string, string>;
  /** metadata is the caller's sandbox metadata ({} when absent or unreadable). */
  metadata: Record<string, string>;
  idleTimeoutSeconds?: number;
  startupTimeoutSeconds?: number;
  /** endAt is the end of the sandbox's lifetime (RFC 3339), when it has one; a paused one has none. */
  endAt?: string;
  /** pausedAt is when a paused sandbox was paused (RFC 3339). */
  pausedAt?: string;
  /**
   * lifetimeSeconds is the lifetime a paused sandbox had left when it was paused (its clock
   * stops): a resume without a timeout gets this much. Absent when it had no lifetime.
   */
  lifetimeSeconds?: number;
  /** retainUntil is when a paused sandbox not resumed by then is deleted with its files (RFC 3339). */
  retainUntil?: string;
  /** snapshotBytes is the size of the layers a paused sandbox's last pause committed. */
  snapshotBytes?: number;
  podIP?: string;
  /** failure says why a stopping or failed sandbox ended (IdleTimeout, PostStartHookFailed, …). */
  failure?: { reason: string; message?: string };
  /** detail explains a starting or failed sandbox (Pulling, ImagePullBackOff, OOMKilled, …). */
  detail?: SandboxStatusDetail;
}

/** metadataOf reads the sandbox-metadata JSON, keeping string values; anything else gives {}. */
function metadataOf(raw: string | undefined): Record<string, string> {
  if (!raw) return {};
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return {};
    return Object.fromEntries(
      Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === "string"),
    );
  } catch {
    return {};
  }
}

/** seconds reads a timeout annotation ("600") as the reconcile steps do: positive numbers only. */
function seconds(raw: string | undefined): number | undefined {
  const n = Number(raw);
  return raw && Number.isFinite(n) && n > 0 ? n : undefined;
}

/** annotatedDetail reads the status-detail annotation; a garbled one reads as absent. */
function annotatedDetail(raw: string | undefined): SandboxStatusDetail | undefined {
  if (!raw) return undefined;
  try {
    const parsed = parseWith(SandboxStatusDetail, JSON.parse(raw));
    return parsed.ok ? parsed.value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * detailOf explains a starting or failed sandbox; running and stopping ones get none (the
 * annotation written while starting outlives the start, and would be stale). A failed sandbox
 * shows the annotation written when it was marked failed (the pod may no longer show the cause),
 * else the live diagnosis. A starting one shows the live diagnosis (buildStatusDetail), but keeps
 * the annotation when it says the same, so lastUpdatedTime is when the problem was first seen.
 */
function detailOf(pod: V1Pod, phase: SandboxViewPhase, now: Date): SandboxStatusDetail | undefined {
  if (phase !== SANDBOX_PHASE.STARTING && phase !== SANDBOX_PHASE.FAILED) return undefined;
  const stored = annotatedDetail(pod.metadata?.annotations?.[SANDBOX_STATUS_DETAIL_ANNOTATION]);
  if (phase === SANDBOX_PHASE.FAILED && stored) return stored;
  const live = buildStatusDetail(pod, now);
  if (stored && live && stored.reason === live.reason && stored.message === live.message) return stored;
  return live ?? stored;
}

/** HOOKS_PENDING is the detail of a running pod whose post-start hooks have not completed yet. */
const hooksPending = (now: Date): SandboxStatusDetail => ({
  reason: "PostStartHooks",
  message: "the container runs; its post-start hooks (envd /init) have not completed yet",
  lastUpdatedTime: now.toISOString(),
});

/**
 * sandboxView shows a claimed pod as a sandbox, or undefined when the pod is not one: no sandbox
 * phase, idle, or no sandbox id (annotation, else label). Optional fields are left out when
 * absent; timeouts are the positive seconds of their annotations; metadata is {} when its JSON is
 * unreadable; `detail` is as detailOf says. A running pod whose post-start hooks are still
 * pending shows as starting: its caller cannot use it yet (its env is not set).
 */
export function sandboxView(pod: V1Pod, now: Date): SandboxView | undefined {
  const podPhase = sandboxPhaseOf(pod);
  if (podPhase === undefined || podPhase === SANDBOX_PHASE.IDLE) return undefined;
  const labels = pod.metadata?.labels ?? {};
  const annotations = pod.metadata?.annotations ?? {};
  const sandboxId = sandboxIdOf(pod);
  if (!sandboxId) return undefined;
  const optional = <T>(key: string, value: T | undefined) => (value ? { [key]: value } : {});
  const phase = (apiPhaseOf(pod) ?? podPhase) as SandboxViewPhase;
  const pending = phase !== podPhase;
  const detail = pending ? hooksPending(now) : detailOf(pod, phase, now);
  const failureReason = annotations[FAILURE_REASON_ANNOTATION];
  return {
    sandboxId,
    namespace: pod.metadata?.namespace ?? "",
    pool: labels[SANDBOX_POOL_LABEL] ?? "",
    pod: pod.metadata?.name ?? "",
    phase,
    ...optional("team", labels[TEAM_LABEL]),
    ...optional("user", labels[USER_LABEL]),
    ...optional("claimedAt", annotations[CLAIMED_AT_ANNOTATION]),
    ...optional("startedAt", annotations[STARTED_AT_ANNOTATION]),
    images: Object.fromEntries((pod.spec?.containers ?? []).map((c) => [c.name, c.image ?? ""])),
    metadata: metadataOf(annotations[SANDBOX_METADATA_ANNOTATION]),
    ...optional("idleTimeoutSeconds", seconds(annotations[IDLE_TIMEOUT_ANNOTATION])),
    ...optional("startupTimeoutSeconds", seconds(annotations[STARTUP_TIMEOUT_ANNOTATION])),
    ...optional("endAt", annotations[END_AT_ANNOTATION]),
    ...optional("podIP", pod.status?.podIP),
    ...(failureReason
      ? {
          failure: {
            reason: failureReason,
            ...optional("message", annotations[FAILURE_MESSAGE_ANNOTATION]),
          },
        }
      : {}),
    ...(detail ? { detail } : {}),
  };
}

/** matchesMetadata tells whether a sandbox's metadata has every key of the filter with its value. */
export function matchesMetadata(view: SandboxView, filter: Readonly<Record<string, string>>): boolean {
  return Object.entries(filter).every(
    ([k, value]) => Object.hasOwn(view.metadata, k) && view.metadata[k] === value,
  );
}

/** filterErrors holds the error results of parseMetadataFilter, for isMetadataFilterError. */
const filterErrors = new WeakSet<object>();

function filterError(error: string): { error: string } {
  const result = { error };
  filterErrors.add(result);
  return result;
}

/**
 * parseMetadataFilter reads a list query's `metadata=k=v,k2=v2` filter into a map. Entries are
 * separated by commas, each split at its first `=` (so a value may contain `=` but no comma);
 * spaces around keys and values are dropped. An empty string is no filter ({}). An entry without
 * `=` or with an empty key, and a key given twice, are errors. A filter on a key named "error"
 * has the same shape as an error: tell them apart with isMetadataFilterError.
 */
export function parseMetadataFilter(text: string): Record<string, string> | { error: string } {
  const filter: Record<string, string> = {};
  if (text.trim() === "") return filter;
  for (const entry of text.split(",")) {
    const eq = entry.indexOf("=");
    const key = (eq < 0 ? entry : entry.slice(0, eq)).trim();
    if (eq < 0 || key === "")
      return filterError(`metadata filter entry ${JSON.stringify(entry)} is not key=value`);
    if (Object.hasOwn(filter, key))
      return filterError(`metadata filter key ${JSON.stringify(key)} is repeated`);
    filter[key] = entry.slice(eq + 1).trim();
  }
  return filter;
}

/** isMetadataFilterError tells an error of parseMetadataFilter from a filter on the key "error". */
export function isMetadataFilterError(
  result: Record<string, string> | { error: string },
): result is { error: string } {
  return filterErrors.has(result);
}

/**
 * whyNotRunning explains a sandbox that did not come up, for an error message: why it ended (the
 * failure annotations) or what it is stuck on (the detail), as ": Reason: message", else "".
 */
export function whyNotRunning(view: SandboxView | undefined): string {
  const cause = view?.failure ?? view?.detail;
  return cause ? `: ${cause.reason}${cause.message ? `: ${cause.message}` : ""}` : "";
}

/** SandboxAccess is how a sandbox's ports are reached, as the native GET shows it. */
export interface SandboxAccess {
  /** domain is the sandbox domain (AGENTBOX_SANDBOX_DOMAIN). */
  domain?: string;
  /** urlPattern is every port's URL, `{port}` to be replaced: `https://{port}-<id>.<domain>`. */
  urlPattern?: string;
  /** envdUrl is envd's URL (port 49983), what the e2b SDK computes. */
  envdUrl?: string;
  /** envdAccessToken is the X-Access-Token envd asks for; its owner's only. */
  envdAccessToken?: string;
  /** trafficAccessToken opens a private sandbox's other ports (its traffic header); its owner's only. */
  trafficAccessToken?: string;
}

/** AccessTokens are the credentials an answer carries: its caller's, when it owns the sandbox. */
export interface AccessTokens {
  envdAccessToken?: string | undefined;
  trafficAccessToken?: string | undefined;
}

/**
 * SandboxDetail is one sandbox as its GET and its create answer it: the view, its network
 * settings ({} when it has the namespace's default egress and public ports) and how it is
 * reached. The list leaves these out: they take the pod's annotations and, for the tokens, a
 * derivation per sandbox.
 */
export type SandboxDetail = SandboxView & { network: SandboxNetwork; access?: SandboxAccess };

/**
 * isOwnSandbox: the tenant is the sandbox's owner (its team and user), admin or not. An admin key
 * sees other tenants' sandboxes but is not their owner: it gets no credential into them.
 */
export function isOwnSandbox(view: SandboxView, tenant: Tenant): boolean {
  return view.team === tenant.team && view.user === tenant.user;
}

/**
 * withAccess adds `access` to a sandbox view: its URLs when a sandbox domain is configured, and
 * the tokens given (the caller gives them to the owner only); no `access` when there is none of
 * these.
 */
export function withAccess(
  view: SandboxView,
  domain: string | undefined,
  tokens: AccessTokens,
): SandboxView & { access?: SandboxAccess } {
  const urls = domain
    ? {
        domain,
        urlPattern: `https://${sandboxHost("{port}", view.sandboxId, domain)}`,
        envdUrl: `https://${sandboxHost(ENVD_PORT, view.sandboxId, domain)}`,
      }
    : {};
  const { envdAccessToken, trafficAccessToken } = tokens;
  const access: SandboxAccess = {
    ...urls,
    ...(envdAccessToken ? { envdAccessToken } : {}),
    ...(trafficAccessToken ? { trafficAccessToken } : {}),
  };
  return Object.keys(access).length > 0 ? { ...view, access } : view;
}

/**
 * sandboxDetail is the native answer for one sandbox (SandboxDetail): `view` with the network
 * settings its pod holds, read as E2B's detail reads them (networkOf: what the create or the last
 * network update asked for), and `access` as withAccess makes it.
 */
export function sandboxDetail(
  pod: V1Pod,
  view: SandboxView,
  domain: string | undefined,
  tokens: AccessTokens,
): SandboxDetail {
  const { access, ...shown } = withAccess(view, domain, tokens);
  return { ...shown, network: networkOf(pod), ...(access ? { access } : {}) };
}
