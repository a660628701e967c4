"""A small OAuth authorization server of our own, for tests: it serves OpenID Connect discovery,
a JWKS and an introspection endpoint over loopback HTTP and mints access tokens (RS256, ES256,
EdDSA) with PyJWT — and, for the refusals, tokens no real issuer would sign. It counts the JWKS
fetches and introspection calls, its keys can be rotated while a server under test runs, and its
key endpoint can be made to hang: accept, read the request, never answer."""

import base64
import hashlib
import hmac
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Key:
    def __init__(self, kid: str, alg: str):
        self.kid, self.alg = kid, alg
        if alg == "RS256":
            self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        elif alg == "ES256":
            self.private = ec.generate_private_key(ec.SECP256R1())
        else:
            self.private = ed25519.Ed25519PrivateKey.generate()

    def jwk(self) -> dict:
        cls = {"RS256": jwt.algorithms.RSAAlgorithm, "ES256": jwt.algorithms.ECAlgorithm,
               "EdDSA": jwt.algorithms.OKPAlgorithm}[self.alg]
        jwk = cls.to_jwk(self.private.public_key(), as_dict=True)
        return {**jwk, "kid": self.kid, "alg": self.alg, "use": "sig"}

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


class LocalIssuer:
    def __init__(self):
        self.keys = {k.kid: k for k in (Key("rsa-1", "RS256"), Key("ec-1", "ES256"), Key("ed-1", "EdDSA"))}
        self.published = list(self.keys)
        self.jwks_fetches: list[float] = []
        self.jwks_held = 0
        self.released = threading.Event()
        self.released.set()
        self.introspections: list[str] = []
        self.introspection_answers: dict[str, dict] = {}
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/.well-known/openid-configuration":
                    body = {"issuer": issuer.url, "jwks_uri": issuer.url + "/jwks",
                            "authorization_endpoint": issuer.url + "/authorize",
                            "token_endpoint": issuer.url + "/token",
                            "introspection_endpoint": issuer.url + "/introspect"}
                elif self.path == "/jwks":
                    issuer.jwks_fetches.append(time.monotonic())
                    if not issuer.released.is_set():
                        issuer.jwks_held += 1
                        issuer.released.wait()
                        issuer.jwks_held -= 1
                        return
                    body = {"keys": [issuer.keys[kid].jwk() for kid in issuer.published]}
                else:
                    self.send_error(404)
                    return
                self.answer(body)

            def do_POST(self):
                if self.path != "/introspect":
                    self.send_error(404)
                    return
                form = urllib.parse.parse_qs(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode())
                token = form.get("token", [""])[0]
                issuer.introspections.append(token)
                self.answer(issuer.introspection_answers.get(token, {"active": False}))

            def answer(self, body):
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def hang_jwks(self) -> None:
        """From now on the key endpoint accepts each request and never answers it."""
        self.released.clear()

    def release(self) -> None:
        self.released.set()

    def rotate(self, kid: str, alg: str = "RS256") -> None:
        """Publishes only a new key from now on."""
        self.keys[kid] = Key(kid, alg)
        self.published = [kid]

    def claims(self, audience: str, **overrides) -> dict:
        now = int(time.time())
        claims = {"iss": self.url, "aud": audience, "sub": "alice", "client_id": "test-client", "iat": now,
                  "nbf": now, "exp": now + 600, "scope": "memory:read memory:write", "org": "acme",
                  "projects": ["api"]}
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def token(self, audience: str, kid: str = "rsa-1", header_kid: str | None = None, **overrides) -> str:
        """A token signed with the key `kid` (its header naming `header_kid` if given)."""
        key = self.keys[kid]
        return jwt.encode(self.claims(audience, **overrides), key.private, algorithm=key.alg,
                          headers={"kid": header_kid or kid})

    def forged(self, audience: str, kid: str = "rsa-1") -> str:
        """Signed by a key of the same type the issuer never published, naming the issuer's `kid`."""
        return jwt.encode(self.claims(audience), Key(kid, "RS256").private, algorithm="RS256", headers={"kid": kid})

    def unsigned(self, audience: str, **overrides) -> str:
        """`alg: none`."""
        head = b64(json.dumps({"alg": "none", "typ": "JWT", "kid": "rsa-1"}).encode())
        return f"{head}.{b64(json.dumps(self.claims(audience, **overrides)).encode())}."

    def hmac_with_public_key(self, audience: str, kid: str = "rsa-1") -> str:
        """HS256 keyed with the issuer's public key (PEM), which anyone can fetch: the classic
        algorithm confusion attack on a verifier that takes the algorithm from the token."""
        head = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
        body = b64(json.dumps(self.claims(audience)).encode())
        mac = hmac.new(self.keys[kid].public_pem(), f"{head}.{body}".encode(), hashlib.sha256).digest()
        return f"{head}.{body}.{b64(mac)}"
