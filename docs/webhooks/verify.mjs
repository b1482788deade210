// Verify Plant Store webhook deliveries (Standard Webhooks) with Node's standard library only.
// Run as a receiver: WEBHOOK_SECRET=whsec_… PORT=8000 node verify.mjs
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";

const TOLERANCE_SECONDS = 5 * 60;

// verifyWebhook says whether a delivery is genuine: headers as Node gives them (lower-case
// names), body the raw bytes (a Buffer), before any JSON parsing.
export function verifyWebhook(secret, headers, body) {
  const id = headers["webhook-id"];
  const timestamp = headers["webhook-timestamp"];
  const signatures = headers["webhook-signature"];
  if (!id || !/^[0-9]+$/.test(timestamp ?? "") || !signatures) return false;
  // 1. The key: strip "whsec_", base64-decode the rest (the whole string is not the key).
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  // 2. Sign "id.timestamp.body" with HMAC-SHA256.
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest();
  // 3. Compare with each "v1,<base64>" entry (two during a secret rotation), in constant time.
  const matched = signatures.split(" ").some((entry) => {
    const [version, sig = ""] = entry.split(",");
    const got = Buffer.from(sig, "base64");
    return version === "v1" && got.length === expected.length && timingSafeEqual(got, expected);
  });
  // 4. Refuse a timestamp more than 5 minutes away from this clock (a replay).
  return matched && Math.abs(Date.now() / 1000 - Number(timestamp)) <= TOLERANCE_SECONDS;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const secret = process.env.WEBHOOK_SECRET;
  const port = Number(process.env.PORT ?? 8000);
  createServer((req, res) => {
    const chunks = [];
    let size = 0;
    req.on("data", (chunk) => {
      size += chunk.length;
      if (size > 1 << 20) req.destroy(); // no delivery is that large
      else chunks.push(chunk);
    });
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (!verifyWebhook(secret, req.headers, body)) {
        res.writeHead(401).end("bad signature\n");
        return;
      }
      // Deliveries come at least once: skip a webhook-id already handled.
      console.log(`verified ${req.headers["webhook-id"]}: ${body}`);
      res.writeHead(204).end();
    });
  }).listen(port, "127.0.0.1", () => console.log(`listening on 127.0.0.1:${port}`));
}
