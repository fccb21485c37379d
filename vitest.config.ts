import { defineConfig } from "vitest/config";

// Two projects: unit tests are pure and never touch a cluster; integration tests share one
// local control plane per run, started (or reused via AGENTBOX_KUBECONFIG) by the global setup.
export default defineConfig({
  test: {
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
    ],
  },
});
