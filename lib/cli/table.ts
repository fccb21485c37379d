/**
 * table lays rows out in columns as kubectl does: upper-case headers, each column as wide as its
 * widest cell, three spaces between columns, no trailing blanks.
 */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("   ")
      .trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...rows.map(line)].join("\n");
}

/** age is how long ago an RFC 3339 time was, in kubectl's style (45s, 12m, 3h, 2d); "-" if unknown. */
export function age(time: string | undefined, now: Date): string {
  const ms = now.getTime() - Date.parse(time ?? "");
  if (!Number.isFinite(ms)) return "-";
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** apiErrorText is the API's error body as the CLI prints it: the message, then the choices. */
export function apiErrorText(status: number, body: string): string {
  try {
    const e = (JSON.parse(body) as { error?: { code?: string; message?: string; choices?: string[] } }).error;
    if (e?.message) {
      const choices = e.choices?.length ? `\nchoices: ${e.choices.join(", ")}` : "";
      return `error: ${e.message} (${status} ${e.code ?? ""})${choices}`.replace(" )", ")");
    }
  } catch {
    // not JSON: fall through to the raw text
  }
  return `error: HTTP ${status}: ${body.slice(0, 300)}`;
}
