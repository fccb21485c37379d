// Names shared with every other agents.navix.sh component: label, annotation and finalizer keys,
// their well-known values, condition types and reasons, and the sandbox lifecycle vocabulary.
// They are wire contract (other controllers, dashboards and kubectl users read them), so they
// are spelled exactly as the upstream API package spells them.

/** GROUP is the API group of every custom resource this control plane owns. */
export const GROUP = "agents.navix.sh";
/** VERSION is the only served and stored version of the API group. */
export const VERSION = "v1alpha1";
/** API_VERSION is the `apiVersion` value written on every object of the group. */
export const API_VERSION = `${GROUP}/${VERSION}` as const;

/** KIND names the group's kinds, for `kind` fields and ownerReferences. */
export const KIND = {
  SANDBOX_TEMPLATE: "SandboxTemplate",
  SANDBOX_POOL: "SandboxPool",
  SANDBOX_ENV: "SandboxEnv",
  SANDBOX_SNAPSHOT: "SandboxSnapshot",
} as const;

/** RESOURCE names the group's REST resources (plurals), for request paths and RBAC rules. */
export const RESOURCE = {
  SANDBOX_TEMPLATES: "sandboxtemplates",
  SANDBOX_POOLS: "sandboxpools",
  SANDBOX_ENVS: "sandboxenvs",
  SANDBOX_SNAPSHOTS: "sandboxsnapshots",
} as const;

// ---------------------------------------------------------------------------------------------
// Labels on sandbox Pods and member SandboxPools.

/** SANDBOX_POOL_LABEL names the SandboxPool that owns a Pod, so a pool can list its Pods. */
export const SANDBOX_POOL_LABEL = "agentbox.navix.sh/sandbox-pool";
/** SANDBOX_PHASE_LABEL carries a Pod's sandbox phase (see SANDBOX_PHASE) for phase selectors. */
export const SANDBOX_PHASE_LABEL = "agentbox.navix.sh/sandbox-phase";
/** SANDBOX_ID_LABEL carries the id of the sandbox that claimed a Pod, to find it by id. */
export const SANDBOX_ID_LABEL = "agentbox.navix.sh/sandbox-id";
/** MANAGED_BY_LABEL records which component manages a Pod. */
export const MANAGED_BY_LABEL = "agentbox.navix.sh/managed-by";
/** MANAGED_BY_SANDBOX_API_SERVER is the MANAGED_BY_LABEL value for Pods managed by the API server. */
export const MANAGED_BY_SANDBOX_API_SERVER = "sandbox-api-server";
/** TEAM_LABEL is the scheduler's tenant-team label; also used for ownership filters. */
export const TEAM_LABEL = "scheduling.navix.sh/team";
/** USER_LABEL is the scheduler's tenant-user label; also used for ownership filters. */
export const USER_LABEL = "scheduling.navix.sh/user";
/**
 * ENV_LABEL is stamped on every member SandboxPool with the owning SandboxEnv's name, so the
 * pool autoscaler can find its Env (and sibling pools) without walking ownerReferences.
 */
export const ENV_LABEL = "agentbox.navix.sh/env";
/**
 * SCALING_GROUP_LABEL is stamped on every member SandboxPool with the member's scaling group,
 * so pools can be grouped without re-reading the Env; absent when excluded from autoscaling.
 */
export const SCALING_GROUP_LABEL = "agentbox.navix.sh/scaling-group";
/**
 * POD_REVISION_LABEL (this project's own key) carries the revision of the pool's pod template a
 * pod was rendered from (podRevision in lib/pool/render-pod.ts), as a Deployment's
 * pod-template-hash does: a pod whose value differs from the pool's current one is outdated and
 * is replaced by the pool's rollout (ADR 0031). A pod without it (made before rollouts) counts
 * as current and is labelled so by the pool.
 */
export const POD_REVISION_LABEL = "agentbox.navix.sh/pod-revision";
/**
 * CLAIMED_BY_LABEL (this project's own key) names the host whose create claimed a Pod (a label-safe
 * form of its instance id, lib/claims/claimed-by.ts), from the claim until the release. It
 * exists so each host's watch of the pods its waiting creates claimed (PoolPodWatch, ADR 0037)
 * selects only its own claims: without it every host decoded every pod event of every host's
 * sandboxes. A claim by a host without an instance id (the Worker) writes none.
 */
export const CLAIMED_BY_LABEL = "agentbox.navix.sh/claimed-by";
/**
 * EGRESS_LABEL (this project's own key) is on a claimed pod whose sandbox has egress rules of its
 * own (E2B's allowOut/denyOut, allowInternetAccess false), value EGRESS_CUSTOM: the namespace's
 * internet policy selects only pods without it, and the sandbox's NetworkPolicy
 * (`agentbox-egress-<sandboxId>`) only pods with it. Set in the claim (or a network update, after
 * the policy is written), removed when the pod returns to idle (after the policy is gone).
 */
export const EGRESS_LABEL = "agentbox.navix.sh/egress";
/** EGRESS_CUSTOM is EGRESS_LABEL's value: the sandbox's own NetworkPolicy decides its egress. */
export const EGRESS_CUSTOM = "custom";
/** SYNC_SOURCE_LABEL marks where a resource came from; absent means locally created. */
export const SYNC_SOURCE_LABEL = "agentbox.io/sync-source";
/** SYNC_SOURCE_GLOBAL is the SYNC_SOURCE_LABEL value of resources synced by the global key manager. */
export const SYNC_SOURCE_GLOBAL = "global";

// ---------------------------------------------------------------------------------------------
// Annotations on sandbox Pods.

/** SANDBOX_ID_ANNOTATION carries the claimed sandbox's id alongside the label of the same key. */
export const SANDBOX_ID_ANNOTATION = "agentbox.navix.sh/sandbox-id";
/** CLAIMED_AT_ANNOTATION records when a Pod was claimed for a sandbox. */
export const CLAIMED_AT_ANNOTATION = "agentbox.navix.sh/claimed-at";
/**
 * WAITER_UNTIL_ANNOTATION (this project's own key, not agentbox's) says that the create which
 * claimed the pod waits for it to run until then (RFC 3339) and completes the start itself; the
 * reconcile runs leave that transition to it until then (ADR 0022). A claim-time annotation, so
 * it goes with the sandbox's other annotations when the pod returns to idle.
 */
export const WAITER_UNTIL_ANNOTATION = "agentbox.navix.sh/waiter-until";
/** STARTED_AT_ANNOTATION records when a claimed sandbox started running. */
export const STARTED_AT_ANNOTATION = "agentbox.navix.sh/started-at";
/** IDLE_TIMEOUT_ANNOTATION holds the idle timeout in seconds ("600"), written at claim when > 0. */
export const IDLE_TIMEOUT_ANNOTATION = "agentbox.navix.sh/idle-timeout";
/**
 * STARTUP_TIMEOUT_ANNOTATION holds the resolved startup timeout in seconds ("120"), written at
 * claim; it wins over the pool's defaultStartupTimeout when cleaning up stuck Starting Pods.
 */
export const STARTUP_TIMEOUT_ANNOTATION = "agentbox.navix.sh/startup-timeout";
/** LAST_ACTIVE_ANNOTATION holds the RFC3339 time of the last proxied request, for idle timeouts. */
export const LAST_ACTIVE_ANNOTATION = "agentbox.navix.sh/last-active";
/** SANDBOX_METADATA_ANNOTATION holds the caller's sandbox metadata as JSON. */
export const SANDBOX_METADATA_ANNOTATION = "agentbox.navix.sh/sandbox-metadata";
/** MANAGED_LABEL_KEYS_ANNOTATION lists label keys set at claim, so release can remove exactly those. */
export const MANAGED_LABEL_KEYS_ANNOTATION = "agentbox.navix.sh/managed-label-keys";
/** MANAGED_ANNOTATION_KEYS_ANNOTATION lists annotation keys set at claim, so release can remove them. */
export const MANAGED_ANNOTATION_KEYS_ANNOTATION = "agentbox.navix.sh/managed-annotation-keys";
/** STOP_REASON_ANNOTATION records why a sandbox stopped (see STOP_REASON), for the history record. */
export const STOP_REASON_ANNOTATION = "agentbox.navix.sh/stop-reason";
/** TERMINATED_AT_ANNOTATION records the RFC3339 termination time of a sandbox. */
export const TERMINATED_AT_ANNOTATION = "agentbox.navix.sh/terminated-at";
/** FAILURE_REASON_ANNOTATION records a machine-readable failure cause ("IdleTimeout", "OOMKilled"). */
export const FAILURE_REASON_ANNOTATION = "agentbox.navix.sh/failure-reason";
/** FAILURE_MESSAGE_ANNOTATION records a human-readable failure description. */
export const FAILURE_MESSAGE_ANNOTATION = "agentbox.navix.sh/failure-message";
/** EXIT_CODE_ANNOTATION records the container exit code as a decimal string. */
export const EXIT_CODE_ANNOTATION = "agentbox.navix.sh/exit-code";
/** RUNNING_IMAGES_ANNOTATION holds a JSON container→image map captured before the idle-image reset. */
export const RUNNING_IMAGES_ANNOTATION = "agentbox.navix.sh/running-images";
/** CONTAINER_ID_ANNOTATION holds the runtime container id captured at release, before the reset. */
export const CONTAINER_ID_ANNOTATION = "agentbox.navix.sh/container-id";
/** POST_START_HOOKS_ANNOTATION holds JSON post-start hook actions to run after Starting→Running. */
export const POST_START_HOOKS_ANNOTATION = "agentbox.navix.sh/post-start-hooks";
/**
 * END_AT_ANNOTATION is a sandbox's lifetime (RFC 3339): past it, the sandbox is released, however
 * active. An extension of agentbox's keys (E2B's `timeout`); timeout and refresh calls move it.
 */
export const END_AT_ANNOTATION = "agentbox.navix.sh/end-at";
/**
 * LIFETIME_ANNOTATION holds a starting sandbox's lifetime in seconds, so Starting → Running can
 * count it from the start (an extension, like end-at); an explicit timeout call removes it.
 */
export const LIFETIME_ANNOTATION = "agentbox.navix.sh/lifetime";
/**
 * SCALE_DOWN_PROTECTED_ANNOTATION marks an Idle Pod chosen for scale-down with the RFC3339 start of
 * its protection window; a claim inside the window cancels the deletion.
 */
export const SCALE_DOWN_PROTECTED_ANNOTATION = "agentbox.navix.sh/scale-down-protected";
/** INPLACE_UPDATE_STATE_ANNOTATION holds the JSON InplaceUpdateState of an in-flight image swap. */
export const INPLACE_UPDATE_STATE_ANNOTATION = "agentbox.navix.sh/inplace-update-state";
/** SANDBOX_STATUS_DETAIL_ANNOTATION holds the JSON SandboxStatusDetail diagnostic of a Pod. */
export const SANDBOX_STATUS_DETAIL_ANNOTATION = "agentbox.navix.sh/sandbox-status-detail";
/**
 * REPLACE_ON_RESET_ANNOTATION (this project's own key) marks a released pod that is deleted and
 * replaced instead of reset in place; its value says why: the pool's reset policy, or containers
 * that served the sandbox and cannot be restarted in place (ADR 0025). Written with the release.
 */
export const REPLACE_ON_RESET_ANNOTATION = "agentbox.navix.sh/replace-on-reset";

/**
 * NETWORK_ANNOTATION (this project's own key) holds a sandbox's network settings as JSON
 * (allowOut, denyOut, allowInternetAccess, allowPublicTraffic, as the API took them), so its GET
 * shows them back; written at claim and by a network update, gone when the pod returns to idle.
 */
export const NETWORK_ANNOTATION = "agentbox.navix.sh/network";
/**
 * TRAFFIC_ANNOTATION (this project's own key) set to TRAFFIC_PRIVATE says the sandbox's ports
 * other than envd's need its traffic token (E2B's allowPublicTraffic: false): the router reads it
 * from the route. Written at claim, gone when the pod returns to idle.
 */
export const TRAFFIC_ANNOTATION = "agentbox.navix.sh/traffic";
/**
 * SEALED_ENV_VARS_ANNOTATION holds a sandbox's env vars sealed for its id (lib/claims/sealing.ts)
 * for its whole life: the post-start hook that hands them to envd goes once it ran, and a pause
 * keeps them for the resume's envd /init (ADR 0045).
 */
export const SEALED_ENV_VARS_ANNOTATION = "agentbox.navix.sh/sealed-env-vars";
/** INCARNATION_ANNOTATION counts a sandbox's resumes on its pod; envd's token is derived from it. */
export const INCARNATION_ANNOTATION = "agentbox.navix.sh/incarnation";
/** RESUME_ATTEMPT_ANNOTATION names the resume that claimed the pod (its snapshot's status.resume.attempt). */
export const RESUME_ATTEMPT_ANNOTATION = "agentbox.navix.sh/resume-attempt";
/**
 * PAUSING_ANNOTATION marks a pod whose sandbox's pause is committed: the snapshot's generation,
 * written (preconditioned on the pod) before the snapshot is marked Paused, so a release that
 * decided without seeing a pause loses to it, and one that sees it asks the snapshot first.
 */
export const PAUSING_ANNOTATION = "agentbox.navix.sh/pausing";
/** ON_TIMEOUT_ANNOTATION is "pause" for a sandbox that pauses at the end of its lifetime (E2B autoPause). */
export const ON_TIMEOUT_ANNOTATION = "agentbox.navix.sh/on-timeout";
/** TRAFFIC_PRIVATE is TRAFFIC_ANNOTATION's value for a sandbox whose ports need its traffic token. */
export const TRAFFIC_PRIVATE = "private";

// ---------------------------------------------------------------------------------------------
// Annotations on SandboxTemplates and SandboxPools.

/**
 * RESET_POLICY_ANNOTATION on a SandboxPool (this project's own key) chooses how a released pod
 * starts afresh: `Restart` (the default: every container restarted in place) or `Replace` (the
 * pod is deleted and the pool creates a new one). ADR 0025.
 */
export const RESET_POLICY_ANNOTATION = "agentbox.navix.sh/reset-policy";
/** TEMPLATE_DOCS_ANNOTATION holds Markdown documentation of a template, shown by the dashboard. */
export const TEMPLATE_DOCS_ANNOTATION = "agentbox.navix.sh/docs";
/** TEMPLATE_POOL_DOCS_ANNOTATION is the legacy per-pool docs key. @deprecated ignored; use TEMPLATE_DOCS_ANNOTATION. */
export const TEMPLATE_POOL_DOCS_ANNOTATION = "agentbox.navix.sh/pool-docs";
/** POOL_TEMPLATE_NAME_ANNOTATION records the SandboxTemplate a pool was created from. */
export const POOL_TEMPLATE_NAME_ANNOTATION = "agentbox.navix.sh/template-name";
/** POOL_TEMPLATE_VERSION_ANNOTATION records that template's version at pool creation. */
export const POOL_TEMPLATE_VERSION_ANNOTATION = "agentbox.navix.sh/template-version";
/** POOL_OVERRIDES_ANNOTATION holds the pool's JSON overrides, re-applied on newer template revisions. */
export const POOL_OVERRIDES_ANNOTATION = "agentbox.navix.sh/overrides";
/**
 * MEMBER_TEMPLATE_ANNOTATION (this project's own key) on an Env member pool holds, as canonical
 * JSON, what the member renders from its template (name, version, synced labels and annotations,
 * pod template, idle image, runtimes) at the revision it was created or last refreshed from:
 * template edits reach it only through RefreshMember (seed 002; ADR 0033).
 */
export const MEMBER_TEMPLATE_ANNOTATION = "agentbox.navix.sh/member-template";
/**
 * LAST_SANDBOX_CREATE_TIME_ANNOTATION is the throttled (≈5 s) RFC3339 UTC mirror of the last
 * sandbox create served for a pool; the autoscaler's fallback after a restart.
 */
export const LAST_SANDBOX_CREATE_TIME_ANNOTATION = "agentbox.navix.sh/last-sandbox-create-time";

/**
 * ADOPTED_POOL_ANNOTATION is on an Env made by adopting a legacy pool (opt-in): the adopted pool's
 * uid. The Env step attaches exactly that pool (an extension of agentbox's keys; its poolmigration
 * package is not specified further).
 */
export const ADOPTED_POOL_ANNOTATION = "agentbox.navix.sh/adopted-pool-uid";

// ---------------------------------------------------------------------------------------------
// Annotations on a template's pod template (spec.template.metadata): they travel with the pod
// template into pools and pods, so the claim path and the router read them where they act.

/**
 * ENVD_ANNOTATION (this project's own key) set to `none` says the pod template's sandboxes run no
 * envd: claims add no envd /init and the router refuses envd's port. Unset: envd runs, and every
 * claim initialises it with the sandbox's access token before the sandbox is Running.
 */
export const ENVD_ANNOTATION = "agentbox.navix.sh/envd";
/**
 * SANDBOX_CONTAINERS_ANNOTATION (this project's own key) names, comma-separated, the containers
 * whose image a create may choose (the sandbox's; sidecars never). Unset: the first container.
 */
export const SANDBOX_CONTAINERS_ANNOTATION = "agentbox.navix.sh/sandbox-containers";
/**
 * TENANT_IMAGES_ANNOTATION (this project's own key) lists, comma-separated, the images a create
 * may put in a sandbox container: a repository (`ghcr.io/org/app`, any tag or digest of it), or a
 * prefix ending in `/*` or `*` (`ghcr.io/org/*`). Unset: each container's own repository.
 */
export const TENANT_IMAGES_ANNOTATION = "agentbox.navix.sh/tenant-images";

// ---------------------------------------------------------------------------------------------
// Finalizers, owner kinds and derived names.

/** POOL_FINALIZER keeps a SandboxPool until its Pods and records are cleaned up. */
export const POOL_FINALIZER = "agentbox.navix.sh/finalizer";
/**
 * SANDBOX_PROTECTION_FINALIZER is on every pool-managed Pod so the controller always sees a
 * deletion window to write the sandbox history record, even for external deletes or evictions.
 */
export const SANDBOX_PROTECTION_FINALIZER = "agentbox.navix.sh/sandbox-protection";
/** SANDBOX_ENV_OWNER_KIND is the ownerReference kind of a SandboxEnv, for owner checks. */
export const SANDBOX_ENV_OWNER_KIND = KIND.SANDBOX_ENV;
/** IMAGE_PULL_SECRET_NAME_PREFIX prefixes the owner's name to name its dockerconfigjson Secret. */
export const IMAGE_PULL_SECRET_NAME_PREFIX = "ips-";

/** IMAGE_PULL_SECRET_TYPE is the type of the ips-<owner> Secrets (a dockerconfigjson Secret). */
export const IMAGE_PULL_SECRET_TYPE = "kubernetes.io/dockerconfigjson";

/** envImagePullSecretName is the deterministic name of an Env's image pull Secret ("ips-{env}"). */
export function envImagePullSecretName(envName: string): string {
  return `${IMAGE_PULL_SECRET_NAME_PREFIX}${envName}`;
}

// ---------------------------------------------------------------------------------------------
// Sandbox lifecycle vocabulary (label and annotation values on Pods).

/** SANDBOX_PHASE lists the SANDBOX_PHASE_LABEL values: idle → starting → running → stopping → idle. */
export const SANDBOX_PHASE = {
  IDLE: "idle",
  /** STARTING: idle → (image pull) → running. */
  STARTING: "starting",
  RUNNING: "running",
  /** STOPPING: running → (image reset) → idle. */
  STOPPING: "stopping",
  FAILED: "failed",
} as const;
/** SandboxPhase is one SANDBOX_PHASE value. */
export type SandboxPhase = (typeof SANDBOX_PHASE)[keyof typeof SANDBOX_PHASE];

/** STOP_REASON lists the STOP_REASON_ANNOTATION values. */
export const STOP_REASON = {
  /** COMPLETED: the sandbox workload finished normally. */
  COMPLETED: "Completed",
  /** CANCELED: stopped before ever reaching running (e.g. deleted while starting). */
  CANCELED: "Canceled",
  /** RELEASED: released by an API call or the idle timeout. */
  RELEASED: "Released",
  /** FAILED: stopped because the Pod failed (OOMKilled, Evicted, …). */
  FAILED: "Failed",
  /**
   * PAUSED: the sandbox paused: its files are in its SandboxSnapshot and it may resume on another
   * pod, so this pod's run leaves no terminal record (ADR 0045).
   */
  PAUSED: "Paused",
} as const;
/** SandboxStopReason is one STOP_REASON value. */
export type SandboxStopReason = (typeof STOP_REASON)[keyof typeof STOP_REASON];

/** INPLACE_UPDATE_PHASE lists the `phase` values of the InplaceUpdateState annotation. */
export const INPLACE_UPDATE_PHASE = {
  STARTING: "starting",
  STOPPING: "stopping",
  COMPLETED: "completed",
} as const;
/** InplaceUpdatePhase is one INPLACE_UPDATE_PHASE value. */
export type InplaceUpdatePhase = (typeof INPLACE_UPDATE_PHASE)[keyof typeof INPLACE_UPDATE_PHASE];

// ---------------------------------------------------------------------------------------------
// Status conditions.

/** POOL_CONDITION lists the SandboxPool condition types. */
export const POOL_CONDITION = {
  /** AVAILABLE: healthy idle Pods can accept sandbox requests. */
  AVAILABLE: "Available",
  /** SCALING: the pool is scaling up or down. */
  SCALING: "Scaling",
  /** DEGRADED: unhealthy idle Pods or failed Pods are present. */
  DEGRADED: "Degraded",
  /**
   * TEMPLATE_AVAILABLE: the SandboxTemplate the pool names exists (only for a pool that names one).
   * False: only admin API keys may claim from the pool, as its visibility rules are gone.
   */
  TEMPLATE_AVAILABLE: "TemplateAvailable",
  /** PROGRESSING: True while pods of an older pod revision are being replaced (a rollout). */
  PROGRESSING: "Progressing",
} as const;

/** POOL_REASON lists the SandboxPool condition reasons, grouped by condition type. */
export const POOL_REASON = {
  // Available
  IDLE_PODS_AVAILABLE: "IdlePodsAvailable",
  NO_IDLE_PODS_AVAILABLE: "NoIdlePodsAvailable",
  // Scaling
  SCALING_UP: "ScalingUp",
  SCALING_DOWN: "ScalingDown",
  REPLICAS_READY: "ReplicasReady",
  // Degraded
  ALL_PODS_HEALTHY: "AllPodsHealthy",
  UNHEALTHY_IDLE_PODS: "UnhealthyIdlePods",
  FAILED_PODS_PRESENT: "FailedPodsPresent",
  UNHEALTHY_AND_FAILED_PODS: "UnhealthyAndFailedPods",
  // TemplateAvailable
  TEMPLATE_FOUND: "TemplateFound",
  TEMPLATE_DELETED: "TemplateDeleted",
  TEMPLATE_NOT_FOUND: "TemplateNotFound",
  // Progressing
  ROLLOUT_IN_PROGRESS: "RolloutInProgress",
  ROLLOUT_COMPLETE: "RolloutComplete",
} as const;

/** ENV_CONDITION lists the SandboxEnv condition types. */
export const ENV_CONDITION = {
  /** READY: all members are Active. */
  READY: "Ready",
  /** TEMPLATE_CONSISTENT: every member pool references the same template (and pinned version). */
  TEMPLATE_CONSISTENT: "TemplateConsistent",
  /** AUTOSCALING_ACTIVE: the autoscaler is configured, enabled and not stalled. */
  AUTOSCALING_ACTIVE: "AutoscalingActive",
} as const;

/** TEMPLATE_CONDITION lists the condition types documented for SandboxTemplate status. */
export const TEMPLATE_CONDITION = {
  AVAILABLE: "Available",
  PROGRESSING: "Progressing",
  DEGRADED: "Degraded",
} as const;
