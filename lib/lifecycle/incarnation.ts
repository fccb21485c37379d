// A sandbox's incarnation counts its resumes (ADR 0045): 0 for the life it was created with, n
// after its n-th resume. envd's access token is derived from the id and the incarnation, so a
// resumed sandbox's envd gets a token its earlier life never gave out.
import { INCARNATION_ANNOTATION } from "../crd/keys.ts";

/** incarnationOf reads a pod's incarnation annotation: a whole number ≥ 0, else 0. */
export function incarnationOf(
  pod: { metadata?: { annotations?: Record<string, string> } } | undefined,
): number {
  const raw = pod?.metadata?.annotations?.[INCARNATION_ANNOTATION];
  const n = Number(raw);
  return raw !== undefined && Number.isSafeInteger(n) && n > 0 ? n : 0;
}
