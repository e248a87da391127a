"""A counting HTTP proxy in front of an S3 endpoint: how many requests a reader sends, and how many bytes it gets.

Any S3 client pointed at the proxy's URL (path-style) reaches the real server unchanged: the request line, headers
(``Host`` included, so SigV4 signatures still verify) and body are forwarded as they are, and the response is
streamed back. Per request the proxy records the method, the object key, the ``Range`` header and the response body
size. Engine-agnostic: it counts our reader, pyiceberg and DuckDB the same way. ``fail_next`` makes the next GETs of
matching keys answer HTTP 503 SlowDown, as S3 does when throttling, to prove that readers retry.
"""

from __future__ import annotations

import http.client
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

from tests.support.services import LOOPBACK

# Connections waiting to be accepted. socketserver's default of 5 overflows when a reader opens many connections at
# once (pyarrow's S3 client pre-buffering column chunks on several threads, while the accepting thread waits for the
# GIL): the kernel then drops the SYN and the client retries it a second later, a ~1 s stall no object store adds.
_LISTEN_BACKLOG = 128
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}
_CHUNK = 256 * 1024


@dataclass(frozen=True)
class Request:
    """One request the proxy forwarded."""

    method: str
    path: str
    range: str | None
    status: int
    body_bytes: int


_SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)


@dataclass
class RequestLog:
    """Requests seen since the last ``reset``; thread-safe. Also holds the pending injected failures."""

    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    failures_left: int = 0
    failure_key: str = ""

    def take_failure(self, method: str, path: str) -> bool:
        """Whether this request is to be answered with 503 SlowDown (one pending failure used up if so)."""
        with self.lock:
            if method == "GET" and self.failures_left > 0 and self.failure_key in path:
                self.failures_left -= 1
                return True
            return False

    def add(self, request: Request) -> None:
        with self.lock:
            self.requests.append(request)

    def reset(self) -> list[Request]:
        """Return the requests logged so far and start a new log."""
        with self.lock:
            taken, self.requests = self.requests, []
        return taken


def summarize(requests: list[Request], *, key_contains: str = "") -> dict[str, int]:
    """Requests and response bytes in total and by method, for keys containing ``key_contains``."""
    chosen = [r for r in requests if key_contains in r.path]
    summary = {"requests": len(chosen), "bytes": sum(r.body_bytes for r in chosen)}
    for request in chosen:
        summary[request.method] = summary.get(request.method, 0) + 1
    summary["files"] = len({r.path.split("?", 1)[0] for r in chosen if r.method == "GET"})
    return summary


class CountingProxy:
    """A proxy on 127.0.0.1 (a free port) forwarding to ``upstream``; ``url`` is its endpoint, ``log`` its counts."""

    def __init__(self, upstream: str) -> None:
        target = urlparse(upstream)
        self.log = RequestLog()
        log = self.log

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out as separate writes: with Nagle's algorithm on, the body would wait for the
            # client's delayed ACK (~40 ms per request on a reused connection), a latency no object store adds.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: object) -> None:
                return

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if log.take_failure(self.command, self.path):
                    self.send_response_only(503, "Slow Down")
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(_SLOW_DOWN)))
                    self.end_headers()
                    self.wfile.write(_SLOW_DOWN)
                    log.add(Request(self.command, self.path, self.headers.get("Range"), 503, 0))
                    return
                upstream_connection = getattr(self, "_upstream", None)
                if upstream_connection is None:
                    upstream_connection = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
                    upstream_connection.connect()
                    upstream_connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    self._upstream = upstream_connection
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                upstream_connection.request(self.command, self.path, body=body, headers=headers)
                response = upstream_connection.getresponse()
                self.send_response_only(response.status, response.reason)
                buffered = None
                if self.command != "HEAD" and response.getheader("Content-Length") is None:
                    buffered = response.read()  # a chunked reply: send it with its length
                for key, value in response.getheaders():
                    if key.lower() not in _HOP_BY_HOP:
                        self.send_header(key, value)
                if buffered is not None:
                    self.send_header("Content-Length", str(len(buffered)))
                # Logged before the body is sent: a client that has its whole response finds its request in the log.
                if buffered is not None:
                    body_bytes = len(buffered)
                elif self.command != "HEAD":
                    body_bytes = int(response.getheader("Content-Length") or 0)
                else:
                    body_bytes = 0
                log.add(Request(self.command, self.path, self.headers.get("Range"), response.status, body_bytes))
                self.end_headers()
                if buffered is not None:
                    self.wfile.write(buffered)
                elif self.command != "HEAD":
                    while chunk := response.read(_CHUNK):
                        self.wfile.write(chunk)
                else:
                    response.read()

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward  # noqa: N815 - http.server names them so

        class Server(ThreadingHTTPServer):
            request_queue_size = _LISTEN_BACKLOG

        self._server = Server((LOOPBACK, 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="s3-counting-proxy", daemon=True)
        self._thread.start()

    def fail_next(self, count: int, key_contains: str = "") -> None:
        """Answer the next ``count`` GETs of keys containing ``key_contains`` with HTTP 503 SlowDown."""
        with self.log.lock:
            self.log.failures_left, self.log.failure_key = count, key_contains

    @property
    def url(self) -> str:
        """The proxy's endpoint URL."""
        return f"http://{LOOPBACK}:{self._server.server_address[1]}"

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
