/**
 * status-shape.ts maps a pod's status to its shape: every field it holds, each value replaced by
 * its form (`containerd://<64 hex> (new)`, `<time>`, `=spec`, `before+1`…), so the statuses two
 * kubelets wrote for the same event compare field for field while their values (ids, digests,
 * times, addresses) differ. A flat path → form map, so a test's diff names the field.
 */
import type { V1ContainerStatus, V1Pod } from "@kubernetes/client-node";

/** StatusShape is a status as path → form, e.g. `containers.main.state.running.startedAt: <time>`. */
export type StatusShape = Record<string, string>;

const HEX64 = "[0-9a-f]{64}";
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
const CONTAINER_ID = new RegExp(`^containerd://${HEX64}$`);
const REPO_DIGEST = new RegExp(`^(.+)@sha256:${HEX64}$`);

/** repositoryOf is a reference without its tag and digest (`repo:tag@sha256:…` → `repo`). */
export function repositoryOf(image: string): string {
  return image.replace(/@sha256:[0-9a-f]+$/, "").replace(/:[^/:@]+$/, "");
}

/** withoutPin is `repo:tag` for `repo:tag@sha256:…`, else the reference as it is. */
function withoutPin(image: string): string {
  const name = image.replace(/@sha256:[0-9a-f]+$/, "");
  return name !== image && /:[^/:@]+$/.test(name) ? name : image;
}

/** imageForm names which reference status.image is: the spec's, its tag without the pin, the image before. */
function imageForm(value: string, spec: string | undefined, before: string | undefined): string {
  if (value === spec) return "=spec";
  if (spec && value === withoutPin(spec)) return "=spec's tag (pin dropped)";
  if (value === before) return "=before";
  return `other: ${value}`;
}

/** imageIdForm is `<spec repo>@sha256:<64 hex>` (or the image before's repo), `""`, or the value. */
function imageIdForm(value: string, spec: string | undefined, before: V1ContainerStatus | undefined): string {
  if (value === "") return '""';
  const repo = REPO_DIGEST.exec(value)?.[1];
  if (!repo) return `other: ${value}`;
  const same = before?.imageID === value ? " (=before)" : " (new)";
  if (spec && repo === repositoryOf(spec)) return `<spec repo>@sha256:<64 hex>${same}`;
  if (before?.image && repo === repositoryOf(before.image)) return `<before repo>@sha256:<64 hex>${same}`;
  return `other: ${value}`;
}

/** containerIdForm is `containerd://<64 hex>` and whether it is the container before's or a new one. */
function containerIdForm(value: string, before: V1ContainerStatus | undefined): string {
  if (!CONTAINER_ID.test(value)) return `other: ${value}`;
  if (before?.containerID === value) return "containerd://<64 hex> (=before)";
  return "containerd://<64 hex> (new)";
}

/** ShapeContext is what a status's values are read against: the pod's spec and the status before. */
interface ShapeContext {
  spec: Map<string, string>;
  before: Map<string, V1ContainerStatus>;
  words: [string, string][];
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * messageForm replaces the images, the pod's uid, name and namespace in a message by
 * placeholders, in one pass (longest first), so no placeholder is rewritten again.
 */
function messageForm(value: string, ctx: ShapeContext): string {
  if (ctx.words.length === 0) return value;
  const names = new Map(ctx.words);
  // Whole words only: a pod named "p" is not the p in "pull".
  const any = new RegExp(
    `(?<![A-Za-z0-9.-])(?:${ctx.words.map(([w]) => escapeRegExp(w)).join("|")})(?![A-Za-z0-9-])`,
    "g",
  );
  return value.replace(any, (w) => names.get(w) ?? w);
}

function leafForm(path: string[], value: unknown, ctx: ShapeContext, container?: string): string {
  const key = path[path.length - 1] ?? "";
  if (value === null) return "null";
  if (value instanceof Date) return "<time>";
  if (typeof value !== "string") return JSON.stringify(value);
  const spec = container ? ctx.spec.get(container) : undefined;
  const before = container ? ctx.before.get(container) : undefined;
  if (TIME.test(value)) return "<time>";
  if (IPV4.test(value)) return "<ipv4>";
  if (key === "containerID") return containerIdForm(value, before);
  if (key === "imageID") return imageIdForm(value, spec, before);
  if (key === "image" && path.length === 1) return imageForm(value, spec, before?.image);
  if (key === "message") return messageForm(value, ctx);
  return JSON.stringify(value);
}

function flatten(
  out: StatusShape,
  prefix: string[],
  value: unknown,
  ctx: ShapeContext,
  container?: string,
  local: string[] = prefix,
): void {
  if (Array.isArray(value)) {
    out[[...prefix, "length"].join(".")] = String(value.length);
    value.forEach((v, i) => {
      flatten(out, [...prefix, String(i)], v, ctx, container, [...local, String(i)]);
    });
    return;
  }
  if (value && typeof value === "object" && !(value instanceof Date)) {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    if (entries.length === 0) out[prefix.join(".")] = "{}";
    for (const [k, v] of entries) flatten(out, [...prefix, k], v, ctx, container, [...local, k]);
    return;
  }
  out[prefix.join(".")] = leafForm(local, value, ctx, container);
}

/** restartForm is restartCount against the status before: `before+N`, or the count itself. */
function restartForm(count: number | undefined, before: V1ContainerStatus | undefined): string {
  if (count === undefined) return "absent";
  if (!before) return String(count);
  const delta = count - (before.restartCount ?? 0);
  return delta === 0 ? "=before" : `before${delta > 0 ? "+" : ""}${delta}`;
}

/**
 * statusShape maps a pod's status to its shape, against `before` (the same pod's earlier status,
 * if any): containerIDs and imageIDs say whether they changed, restartCount says by how much.
 * Conditions are keyed by type (their order is a separate entry), container statuses by name.
 */
export function statusShape(pod: V1Pod, before?: V1Pod): StatusShape {
  const status = (pod.status ?? {}) as Record<string, unknown>;
  const statuses = pod.status?.containerStatuses ?? [];
  const ctx: ShapeContext = {
    spec: new Map((pod.spec?.containers ?? []).map((c) => [c.name, c.image ?? ""])),
    before: new Map((before?.status?.containerStatuses ?? []).map((s) => [s.name, s])),
    words: [],
  };
  const words = new Map<string, string>();
  for (const [name, image] of ctx.spec) words.set(image, `<spec ${name}>`);
  for (const [name, s] of ctx.before)
    if (s.image && !words.has(s.image)) words.set(s.image, `<before ${name}>`);
  if (pod.metadata?.uid) words.set(pod.metadata.uid, "<uid>");
  if (pod.metadata?.name) words.set(pod.metadata.name, "<pod>");
  if (pod.metadata?.namespace) words.set(pod.metadata.namespace, "<namespace>");
  // Longest first, so an image is replaced before a shorter word inside it.
  ctx.words = [...words].filter(([w]) => w !== "").sort((a, b) => b[0].length - a[0].length);

  const out: StatusShape = {};
  for (const [key, value] of Object.entries(status)) {
    if (value === undefined) continue;
    if (key === "conditions" || key === "containerStatuses") continue;
    flatten(out, [key], value, ctx);
  }
  const conditions = pod.status?.conditions ?? [];
  out["conditions.order"] = conditions.map((c) => c.type).join(",");
  for (const c of conditions) {
    const { type, ...rest } = c as unknown as Record<string, unknown>;
    flatten(out, ["conditions", String(type)], rest, ctx);
  }
  out["containers.order"] = statuses.map((s) => s.name).join(",");
  for (const s of statuses) {
    const { name, restartCount, ...rest } = s as unknown as Record<string, unknown> & {
      name: string;
      restartCount?: number;
    };
    const prefix = ["containers", name];
    flatten(out, prefix, rest, ctx, name, []);
    out[[...prefix, "restartCount"].join(".")] = restartForm(restartCount, ctx.before.get(name));
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * shapeDifferences lists the paths whose forms differ between two shapes (`path: a → b`, a
 * missing side as `absent`), leaving out paths any of `ignore` matches.
 */
export function shapeDifferences(a: StatusShape, b: StatusShape, ignore: readonly RegExp[] = []): string[] {
  const paths = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return paths
    .filter((p) => !ignore.some((r) => r.test(p)) && a[p] !== b[p])
    .map((p) => `${p}: ${a[p] ?? "absent"} → ${b[p] ?? "absent"}`);
}
