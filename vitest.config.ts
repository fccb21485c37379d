import { defineConfig } from "vitest/config";

// Four projects: unit tests are pure and never touch a cluster; integration tests share one
// local control plane per run, started (or reused via AGENTBOX_CLUSTER) by the global setup;
// history tests share one PostgreSQL per run (test/history/global-setup.ts);
// fault tests stop, kill and restart real processes, so each file starts a control plane and a
// host process of its own.
const jsonReport = process.env.VITEST_JSON_REPORT;

export default defineConfig({
  test: {
    // CI asks for a JSON report next to the console output, to print its closing count line.
    reporters: jsonReport ? ["default", "json"] : ["default"],
    ...(jsonReport ? { outputFile: { json: jsonReport } } : {}),
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          globalSetup: ["test/integration/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          // The history stores' contract, against real SQLite, PostgreSQL (one server per run) and D1.
          name: "history",
          include: ["test/history/**/*.test.ts"],
          globalSetup: ["test/history/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "faults",
          include: ["test/faults/**/*.test.ts"],
          testTimeout: 180_000,
          hookTimeout: 240_000,
        },
      },
    ],
  },
});
