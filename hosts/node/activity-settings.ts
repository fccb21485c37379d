// The optional pulled activity source's settings (AGENTBOX_ACTIVITY_SOURCE_*), read with the host's
// other settings (config.ts) and by `npm start`.
import { readFileSync } from "node:fs";
import * as v from "valibot";
import { type ActivitySourceConfig, DEFAULT_ACTIVITY_TIMEOUT_MS } from "../../functions/activity-source.ts";
import { parseWith } from "../../lib/crd/parse-with.ts";
import { Seconds } from "./setting-values.ts";

/** ACTIVITY_ENV lists the optional pulled activity source's settings (readActivitySource). */
const ACTIVITY_ENV = v.object({
  AGENTBOX_ACTIVITY_SOURCE_URL: v.optional(
    v.pipe(
      v.string(),
      v.check((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), "must be an http(s) URL"),
    ),
  ),
  AGENTBOX_ACTIVITY_SOURCE_TOKEN: v.optional(v.pipe(v.string(), v.minLength(1, "must not be empty"))),
  AGENTBOX_ACTIVITY_SOURCE_TOKEN_FILE: v.optional(v.string()),
  AGENTBOX_ACTIVITY_SOURCE_TIMEOUT_SECONDS: v.optional(
    v.pipe(
      Seconds,
      v.check((n) => n > 0, "must be more than 0"),
      v.maxValue(60),
    ),
    String(DEFAULT_ACTIVITY_TIMEOUT_MS / 1000),
  ),
});

/**
 * readActivitySource reads the optional pulled activity source the idle-release step asks before
 * it releases anything (undefined when AGENTBOX_ACTIVITY_SOURCE_URL is unset). Its token comes
 * inline or from a file; errors name the variable and never echo the URL or the token.
 */
export function readActivitySource(
  env: Record<string, string | undefined>,
): { ok: true; value: ActivitySourceConfig | undefined } | { ok: false; errors: string[] } {
  const parsed = parseWith(ACTIVITY_ENV, env);
  if (!parsed.ok) return { ok: false, errors: parsed.issues.map((i) => `${i.path}: ${i.message}`) };
  const e = parsed.value;
  const url = e.AGENTBOX_ACTIVITY_SOURCE_URL;
  const tokenFile = e.AGENTBOX_ACTIVITY_SOURCE_TOKEN_FILE;
  if (!url) {
    const stray = ["AGENTBOX_ACTIVITY_SOURCE_TOKEN", "AGENTBOX_ACTIVITY_SOURCE_TOKEN_FILE"].filter(
      (k) => env[k],
    );
    if (stray.length === 0) return { ok: true, value: undefined };
    return { ok: false, errors: stray.map((k) => `${k}: needs AGENTBOX_ACTIVITY_SOURCE_URL`) };
  }
  let token = e.AGENTBOX_ACTIVITY_SOURCE_TOKEN;
  if (!token && tokenFile) {
    try {
      token = readFileSync(tokenFile, "utf8").trim();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "error";
      return {
        ok: false,
        errors: [`AGENTBOX_ACTIVITY_SOURCE_TOKEN_FILE: cannot read ${tokenFile} (${code})`],
      };
    }
    if (!token) return { ok: false, errors: [`AGENTBOX_ACTIVITY_SOURCE_TOKEN_FILE: ${tokenFile} is empty`] };
  }
  const timeoutMs = Math.round(e.AGENTBOX_ACTIVITY_SOURCE_TIMEOUT_SECONDS * 1000);
  return { ok: true, value: { url, timeoutMs, ...(token ? { token } : {}) } };
}
