// Team, user and sandbox ids end up as Kubernetes label values (scheduling.navix.sh/team,
// agentbox.navix.sh/sandbox-id, …) and in label selectors, so every module that accepts one from
// outside checks it with the same rule, before it can reach a selector or a patch.

const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/**
 * isLabelValue tells whether s is a non-empty Kubernetes label value: at most 63 characters,
 * alphanumerics with `-`, `_` and `.` inside. Such a value is also safe to put in a label
 * selector unquoted (no `,`, `=`, `!`, spaces or parentheses).
 */
export function isLabelValue(s: string): boolean {
  return LABEL_VALUE.test(s);
}
