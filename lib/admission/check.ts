import type { ApiIssue } from "../crd/parse-with.ts";

/**
 * Check is one named admission rule: it looks at a parsed (schema-valid, defaulted) object and
 * returns every violation, each with the field path and a reason a user can act on.
 */
export interface Check<T> {
  name: string;
  run: (obj: T) => ApiIssue[];
}

/** runChecks applies every check and tags each issue with the rule that raised it. */
export function runChecks<T>(checks: readonly Check<T>[], obj: T): ApiIssue[] {
  return checks.flatMap((c) =>
    c.run(obj).map((issue) => ({ ...issue, message: `${issue.message} [${c.name}]` })),
  );
}
