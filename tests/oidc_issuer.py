"""A local OpenID Connect issuer for the sign-in browser test: discovery, authorization (signs one user in at
once, no login form), token (an RS256-signed ID token carrying the request's nonce) and JWKS.

Just enough of OpenID Connect Core 1.0 (authorization code flow) for a real relying party, Streamlit's st.login
through Authlib, to run its whole flow against it: the client secret, the code (single use), the redirect URI
and, when the client sends one, the PKCE S256 verifier are checked as a provider would.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

from joserfc import jwt
from joserfc.jwk import RSAKey


class Issuer:
    """Serve on 127.0.0.1 (a free port) in a thread; `with Issuer(...) as iss:` gives `iss.url`."""

    def __init__(self, email: str, client_id: str, client_secret: str):
        self.email, self.client_id, self.client_secret = email, client_id, client_secret
        self.key = RSAKey.generate_key(2048, parameters={"kid": "test-key", "use": "sig", "alg": "RS256"})
        self.codes: dict[str, dict] = {}
        self.tokens_issued = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Issuer:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def metadata(self) -> dict:
        return {"issuer": self.url, "authorization_endpoint": f"{self.url}/authorize",
                "token_endpoint": f"{self.url}/token", "jwks_uri": f"{self.url}/jwks",
                "response_types_supported": ["code"], "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"], "scopes_supported": ["openid", "email", "profile"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
                "code_challenge_methods_supported": ["S256"]}

    def _handler(self):
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet: the test prints what fails
                pass

            def _json(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                url = urlparse(self.path)
                q = {k: v[-1] for k, v in parse_qs(url.query).items()}
                if url.path == "/.well-known/openid-configuration":
                    return self._json(200, issuer.metadata())
                if url.path == "/jwks":
                    return self._json(200, {"keys": [issuer.key.as_dict(private=False)]})
                if url.path == "/authorize":
                    if q.get("client_id") != issuer.client_id or q.get("response_type") != "code":
                        return self._json(400, {"error": "invalid_request"})
                    code = secrets.token_urlsafe(16)
                    issuer.codes[code] = {"nonce": q.get("nonce"), "redirect_uri": q["redirect_uri"],
                                          "challenge": q.get("code_challenge")}
                    self.send_response(302)
                    self.send_header("Location", q["redirect_uri"] + "?" + urlencode(
                        {"code": code, "state": q.get("state", "")}))
                    self.end_headers()
                    return None
                return self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:  # noqa: N802
                if urlparse(self.path).path != "/token":
                    return self._json(404, {"error": "not_found"})
                form = {k: v[-1] for k, v in parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode()).items()}
                cid, secret = form.get("client_id"), form.get("client_secret")
                auth = self.headers.get("Authorization", "")
                if auth.startswith("Basic "):
                    cid, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
                if (cid, secret) != (issuer.client_id, issuer.client_secret):
                    return self._json(401, {"error": "invalid_client"})
                grant = issuer.codes.pop(form.get("code", ""), None)  # single use
                if grant is None or form.get("redirect_uri") != grant["redirect_uri"]:
                    return self._json(400, {"error": "invalid_grant"})
                if grant["challenge"]:
                    verifier = form.get("code_verifier", "")
                    digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
                    if digest != grant["challenge"]:
                        return self._json(400, {"error": "invalid_grant", "error_description": "PKCE"})
                now = int(time.time())
                claims = {"iss": issuer.url, "sub": "user-1", "aud": issuer.client_id, "iat": now, "exp": now + 300,
                          "email": issuer.email, "email_verified": True, "name": "Test User"}
                if grant["nonce"]:
                    claims["nonce"] = grant["nonce"]
                id_token = jwt.encode({"alg": "RS256", "kid": "test-key"}, claims, issuer.key)
                issuer.tokens_issued += 1
                return self._json(200, {"access_token": secrets.token_urlsafe(16), "token_type": "Bearer",
                                        "expires_in": 300, "id_token": id_token, "scope": "openid email profile"})

        return Handler
