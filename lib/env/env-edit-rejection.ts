// How the apiserver's refusal of an Env edit is told to the operator: admission's message (the
// same checks as kubectl gets) with each field path, and, where a path indexes a member or a
// group, that member's or group's name, since the caller named it, not its index.
import type { ApiIssue } from "../crd/parse-with.ts";
import type { SandboxEnv } from "../crd/sandbox-env.ts";

/** EnvEditRejection is a refused edit as the console and the CLI show it (and an HTTP status). */
export interface EnvEditRejection {
  status: 400 | 403 | 404 | 409 | 422;
  code: "BadRequest" | "Forbidden" | "NotFound" | "Conflict" | "Invalid";
  message: string;
  fields: ApiIssue[];
}

const CODES = {
  400: "BadRequest",
  403: "Forbidden",
  404: "NotFound",
  409: "Conflict",
  422: "Invalid",
} as const;

/** rejection builds an EnvEditRejection of a status and message (fields: those named). */
export function rejection(status: EnvEditRejection["status"], message: string, fields: ApiIssue[] = []) {
  return { status, code: CODES[status], message, fields } satisfies EnvEditRejection;
}

/**
 * namePaths adds the member's or group's name to each path of `text` that indexes one in `env`
 * (the Env as the edit would leave it, whose indexes the apiserver's message uses):
 * `spec.clusters[0].members[2].config.minReplicas` → `… (member "b")`.
 */
export function namePaths(env: SandboxEnv, text: string): string {
  return text
    .replace(/spec\.clusters\[(\d+)\]\.members\[(\d+)\]([\w.[\]]*)/g, (all, c: string, m: string) => {
      const name = env.spec.clusters?.[Number(c)]?.members?.[Number(m)]?.name;
      return name ? `${all} (member "${name}")` : all;
    })
    .replace(/spec\.autoscaling\.groups\[(\d+)\]([\w.[\]]*)/g, (all, g: string) => {
      const name = env.spec.autoscaling?.groups?.[Number(g)]?.name;
      return name ? `${all} (group "${name}")` : all;
    });
}

/**
 * apiserverRejection words the apiserver's refusal of an edit's write (status, reason, message
 * and field causes as KubeError carries them): 422/400 keep admission's or the schema's message
 * without the request's prefix, each field named (from the causes, else from admission's
 * "<Kind> is invalid: path: message; …"); 403 says the caller may not patch the Env; 404 that it
 * is gone. Undefined for what is no refusal of the request (a conflict, the apiserver's trouble).
 */
export function apiserverRejection(
  next: SandboxEnv,
  e: { status: number; message: string; causes: readonly { field?: string; message?: string }[] },
): EnvEditRejection | undefined {
  const said = e.message
    .replace(/^[^:]*: \d{3} \w+: /, "")
    .replace(/^admission webhook "[^"]*" denied the request: /, "");
  if (e.status === 403)
    return rejection(403, `you may not change this SandboxEnv (the apiserver says: ${said})`);
  if (e.status === 404) return rejection(404, said);
  if (e.status !== 422 && e.status !== 400) return undefined;
  const fromCauses = e.causes
    .filter((c) => c.field || c.message)
    .map((c) => ({ path: c.field ?? "", message: c.message ?? "" }));
  const listed = /is invalid: (.*)$/s.exec(said)?.[1] ?? "";
  const fromMessage = listed
    .split("; ")
    .map((part) => /^(spec[\w.[\]]*): (.*)$/s.exec(part))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ path: m[1] ?? "", message: m[2] ?? "" }));
  const fields = (fromCauses.length > 0 ? fromCauses : fromMessage).map((f) => ({
    path: namePaths(next, f.path),
    message: f.message,
  }));
  return rejection(e.status === 400 ? 400 : 422, namePaths(next, said), fields);
}
