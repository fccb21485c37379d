import pg from "pg";

/**
 * storedRecords reads the PostgreSQL history table itself (not through a host): how many rows
 * each sandbox id of `namespace` has, so a test sees a record lost or doubled whatever the API
 * answers. Rejects while the database is down (bounded by a 10 s connect and query timeout).
 */
export async function storedRecords(url: string, namespace: string): Promise<Map<string, number>> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: 10_000,
    query_timeout: 10_000,
  });
  await client.connect();
  try {
    const { rows } = await client.query<{ sandbox_id: string }>(
      "SELECT sandbox_id FROM sandbox_history WHERE namespace = $1",
      [namespace],
    );
    const counts = new Map<string, number>();
    for (const { sandbox_id } of rows) counts.set(sandbox_id, (counts.get(sandbox_id) ?? 0) + 1);
    return counts;
  } finally {
    await client.end();
  }
}

/**
 * storedOnceEach waits (up to `timeoutMs`) until each of `ids` has a row in the table, and answers
 * all of the namespace's rows counted by sandbox id (each must be 1: tests check).
 */
export async function storedOnceEach(
  url: string,
  namespace: string,
  ids: Iterable<string>,
  timeoutMs = 60_000,
): Promise<Map<string, number>> {
  const wanted = [...ids];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await storedRecords(url, namespace).catch(() => undefined);
    if (rows && wanted.every((id) => rows.has(id))) return rows;
    if (Date.now() > deadline) {
      const missing = rows ? wanted.filter((id) => !rows.has(id)) : wanted;
      throw new Error(
        `${missing.length} sandboxes not recorded after ${timeoutMs} ms: ${missing.slice(0, 5).join(", ")}`,
      );
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}
