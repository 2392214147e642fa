"""A small OpenAI-compatible HTTP server for tests (127.0.0.1, random free port).

It serves ``GET /v1/models`` and ``POST /v1/chat/completions`` from a thread, can fail a
planned number of requests (429 / 5xx) before answering, can reject structured-output
modes with 400 / 422, and records every request body, status and the largest number of
requests it handled at once. It shuts itself down after ``lifetime_s`` even if a test
forgets to stop it.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Optional


def words(text: str) -> int:
    return len(text.split())


def default_reply(body: dict[str, Any]) -> str:
    """Echo the last message's content inside a JSON object."""
    return json.dumps({"echo": body["messages"][-1]["content"]})


class FakeOpenAIServer:
    """Args:
    fail_plan: HTTP status codes returned, in order, to the first chat requests (each
        with ``retry-after-ms: retry_after_ms`` so the client's backoff stays short).
    reject: ``{mode: status}`` with mode in ``json_schema`` (response_format.type
        json_schema), ``json_object+schema`` (json_object with a ``schema`` key),
        ``json_object`` (json_object without one), ``any`` (every chat request).
    delay_s: time each chat request takes (lets requests overlap).
    usage_style: ``openai`` (usage + prompt_tokens_details), ``timings`` (llama.cpp
        ``timings`` only), ``none``.
    cached_tokens: value reported as cached prompt tokens.
    finish_reason: reported finish reason.
    reply: body -> assistant text.
    models: ids listed by ``/v1/models``.
    fail_if: body -> status to answer at once (before ``delay_s``), or None.
    """

    def __init__(
        self,
        *,
        fail_plan: Iterable[int] = (),
        reject: Optional[dict[str, int]] = None,
        delay_s: float = 0.0,
        usage_style: str = "openai",
        cached_tokens: int = 0,
        finish_reason: str = "stop",
        reply: Callable[[dict[str, Any]], str] = default_reply,
        models: Iterable[str] = ("fake-model",),
        retry_after_ms: int = 5,
        lifetime_s: float = 120.0,
        fail_if: Optional[Callable[[dict[str, Any]], Optional[int]]] = None,
    ):
        self.fail_plan = list(fail_plan)
        self.reject = dict(reject or {})
        self.delay_s = delay_s
        self.usage_style = usage_style
        self.cached_tokens = cached_tokens
        self.finish_reason = finish_reason
        self.reply = reply
        self.models = list(models)
        self.retry_after_ms = retry_after_ms
        self.lifetime_s = lifetime_s
        self.fail_if = fail_if
        self.bodies: list[dict[str, Any]] = []  # every chat request body, in arrival order
        self.statuses: list[int] = []  # status sent for each chat request
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None
        self._timer: Optional[threading.Timer] = None

    # -- lifecycle --------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> "FakeOpenAIServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's pool expects

            def log_message(self, *a):  # quiet
                pass

            def _send(self, status: int, payload: dict[str, Any], extra: Optional[dict[str, str]] = None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [
                        {"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in server.models
                    ]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(n) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                with server._lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    server.bodies.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    planned = server.fail_plan.pop(0) if server.fail_plan else None
                early = server.fail_if(body) if server.fail_if else None
                if early is not None:
                    planned = early
                try:
                    if server.delay_s and early is None:
                        time.sleep(server.delay_s)
                    status, payload, extra = server._answer(body, planned)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                        server.statuses.append(status)
                self._send(status, payload, extra)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        self._timer = threading.Timer(self.lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._timer is not None:
            self._timer.cancel()

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- behaviour --------------------------------------------------------------------
    @staticmethod
    def mode_of(body: dict[str, Any]) -> Optional[str]:
        fmt = body.get("response_format")
        if not fmt:
            return None
        if fmt.get("type") == "json_object":
            return "json_object+schema" if "schema" in fmt else "json_object"
        return fmt.get("type")

    def _answer(self, body: dict[str, Any], planned: Optional[int]):
        if planned is not None:
            return planned, {"error": {"message": f"planned failure {planned}"}}, {
                "retry-after-ms": str(self.retry_after_ms)
            }
        mode = self.mode_of(body)
        for key in ("any", mode):
            if key in self.reject:
                status = self.reject[key]
                return status, {"error": {"message": f"response_format {mode} not supported", "type": "invalid_request_error"}}, None
        text = self.reply(body)
        prompt = sum(words(m["content"]) for m in body["messages"])
        completion = words(text)
        out: dict[str, Any] = {
            "id": f"chatcmpl-{len(self.bodies)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "?"),
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": self.finish_reason,
            }],
        }
        if self.usage_style == "openai":
            out["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
            }
        elif self.usage_style == "timings":
            out["timings"] = {
                "prompt_n": prompt - self.cached_tokens,
                "cache_n": self.cached_tokens,
                "predicted_n": completion,
                "prompt_ms": 1.0,
                "predicted_ms": 1.0,
            }
        return 200, out, None
