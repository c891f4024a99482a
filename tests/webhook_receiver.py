"""A stand-alone webhook receiver, as a team would run next to the registry: it imports nothing
of the project (only the standard library) and is started as its own process
(``python -I tests/webhook_receiver.py SECRET LOG``; ``-I`` keeps the project off ``sys.path``).

It listens on a free loopback port and prints ``http://127.0.0.1:<port>/hook`` as its first line.
Each POST's ``X-Hub-Signature-256`` is checked against an HMAC-SHA256 of the body with SECRET
(hmac + hashlib); one JSON line per request is appended to LOG: ``{"signed", "type", "subject",
"content_type"}``. A signed delivery is answered 200, an unsigned or badly signed one 401.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


def main(secret: str, log_path: str) -> None:
    key = secret.encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            expected = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
            signed = hmac.compare_digest(expected, self.headers.get("X-Hub-Signature-256", ""))
            try:
                event = json.loads(body)
            except ValueError:
                event = {}
            entry = {
                "signed": signed,
                "type": event.get("type", ""),
                "subject": event.get("subject", ""),
                "content_type": self.headers.get("Content-Type", ""),
            }
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps(entry) + "\n")
            answer = b"verified" if signed else b"bad signature"
            self.send_response(200 if signed else 401)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    print(f"http://127.0.0.1:{server.server_address[1]}/hook", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
