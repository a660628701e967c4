"""A real OpenAI-compatible embeddings server for the tests: POST /v1/embeddings answered with
all-MiniLM-L6-v2 vectors computed by the independent numpy implementation that checks the
Rust embedder (crates/embed/tests/fixtures/minilm_reference.py). It speaks the same wire format
as OpenAI, Ollama or vLLM, so `CORTEX_EMBEDDER=openai` is exercised end to end offline."""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "crates" / "embed" / "tests" / "fixtures"))

import minilm_reference as reference  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

MODEL_NAME = "minilm-numpy"


class EmbeddingServer:
    """Serves on a free loopback port until `close()`; `requests` counts answered calls.
    With `hold`, a request for a text containing that word is held on purpose: `held` is set
    when one arrives, and it is answered only after `release()` (a slow embedder, without
    timing anything)."""

    def __init__(self, model_dir: Path, hold: str | None = None):
        self.hold = hold
        self.held = threading.Event()
        self.released = threading.Event()
        self.tensors = reference.load_safetensors(model_dir / "model.safetensors")
        self.config = json.loads((model_dir / "config.json").read_text())
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(256)
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                if self.path != "/v1/embeddings":
                    return self.answer(404, {"error": {"message": f"no route {self.path}"}})
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if body.get("model") != MODEL_NAME:
                    return self.answer(404, {"error": {"message": f"model {body.get('model')} not found"}})
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                if server.hold and any(server.hold in text for text in inputs):
                    server.held.set()
                    server.released.wait()
                data = [{"object": "embedding", "index": i, "embedding": server.embed(text)}
                        for i, text in enumerate(inputs)]
                server.requests += 1
                self.answer(200, {"object": "list", "model": MODEL_NAME, "data": data})

            def answer(self, status, payload):
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def embed(self, text: str) -> list[float]:
        return reference.embed(self.tensors, self.config, self.tokenizer.encode(text).ids).tolist()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def release(self):
        self.released.set()

    def close(self):
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()
