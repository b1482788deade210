"""Verify Plant Store webhook deliveries (Standard Webhooks) with Python's standard library only.

Run as a receiver: WEBHOOK_SECRET=whsec_… PORT=8000 python3 verify.py
"""
import base64
import binascii
import hashlib
import hmac
import os
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

TOLERANCE_SECONDS = 5 * 60


def verify_webhook(secret, headers, body):
    """Say whether a delivery is genuine: headers a mapping with case-insensitive get (as
    http.server gives them), body the raw bytes, before any JSON parsing."""
    msg_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp") or ""
    signatures = headers.get("webhook-signature")
    if not msg_id or not timestamp.isascii() or not timestamp.isdigit() or not signatures:
        return False
    # 1. The key: strip "whsec_", base64-decode the rest (the whole string is not the key).
    key = base64.b64decode(secret.removeprefix("whsec_"))
    # 2. Sign "id.timestamp.body" with HMAC-SHA256.
    expected = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    # 3. Compare with each "v1,<base64>" entry (two during a secret rotation), in constant time.
    matched = False
    for entry in signatures.split(" "):
        version, _, sig = entry.partition(",")
        try:
            got = base64.b64decode(sig, validate=True)
        except binascii.Error:
            continue
        if version == "v1" and hmac.compare_digest(got, expected):
            matched = True
    # 4. Refuse a timestamp more than 5 minutes away from this clock (a replay).
    return matched and abs(time.time() - int(timestamp)) <= TOLERANCE_SECONDS


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > 1 << 20:  # no delivery is that large
            self.send_response(413)
            self.end_headers()
            return
        body = self.rfile.read(length)
        if not verify_webhook(os.environ["WEBHOOK_SECRET"], self.headers, body):
            self.send_response(401)
            self.end_headers()
            self.wfile.write(b"bad signature\n")
            return
        # Deliveries come at least once: skip a webhook-id already handled.
        print(f"verified {self.headers['webhook-id']}: {body.decode()}", flush=True)
        self.send_response(204)
        self.end_headers()


if __name__ == "__main__":
    port = int(os.environ.get("PORT", "8000"))
    server = HTTPServer(("127.0.0.1", port), Receiver)
    print(f"listening on 127.0.0.1:{port}", flush=True)
    server.serve_forever()
