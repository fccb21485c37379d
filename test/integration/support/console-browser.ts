import { type Browser, chromium, type Page, type Response } from "playwright-core";
import { expect } from "vitest";
import { CHROMIUM_ARGS, chromiumPath } from "../../../infra/ci/chromium.ts";

/** launchChromium starts Debian's Chromium headless for the console's browser tests (ADR 0021). */
export async function launchChromium(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error("no Chromium: the test preflight installs Debian's (see ADR 0021)");
  return chromium.launch({ executablePath, args: CHROMIUM_ARGS });
}

/**
 * signIn opens a page of the console at `base` signed in with `credential` (an API key or the
 * admin token), through the console's own sign-in form.
 */
export async function signIn(browser: Browser, base: string, credential: string): Promise<Page> {
  const context = await browser.newContext({
    ignoreHTTPSErrors: true,
    viewport: { width: 1400, height: 900 },
  });
  const page = await context.newPage();
  await goto(page, `${base}/ui`);
  expect(new URL(page.url()).pathname).toBe("/ui/login");
  await page.fill("input[name=credential]", credential);
  await page.click("button[type=submit]");
  await page.waitForURL(`${base}/ui`);
  return page;
}

/**
 * goto navigates `page` to `url`, once more if Chromium aborted it with ERR_NETWORK_CHANGED: it
 * aborts navigations in flight whenever the machine's interfaces change, and the real node's pods
 * add and remove veth interfaces on the host while these tests run. Nothing else is retried.
 */
export async function goto(page: Page, url: string): Promise<Response | null> {
  try {
    return await page.goto(url);
  } catch (e) {
    if (!String(e).includes("ERR_NETWORK_CHANGED")) throw e;
    return page.goto(url);
  }
}
