// The official `e2b` SDK, unmodified, signing /files URLs (uploadUrl, downloadUrl) for the sandbox
// E2B_TEST_SANDBOX, as a user hands them to a browser: it prints one JSON line with each URL's
// path and query (the test sends them through the router, without the envd token), one of each
// without an expiration and one with, as the SDK makes them.
import { Sandbox } from "e2b";

const sbx = await Sandbox.connect(process.env.E2B_TEST_SANDBOX ?? "");
const pathOf = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};
const out = {
  upload: pathOf(await sbx.uploadUrl("/home/user/signed.txt")),
  download: pathOf(await sbx.downloadUrl("/home/user/signed.txt")),
  uploadExpiring: pathOf(await sbx.uploadUrl("/home/user/signed.txt", { useSignatureExpiration: 600 })),
  downloadExpiring: pathOf(await sbx.downloadUrl("/home/user/signed.txt", { useSignatureExpiration: 600 })),
};
console.log(JSON.stringify(out));
