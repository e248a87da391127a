"""An HTTP proxy in front of a REST catalog that fails chosen requests the ways a network or a catalog does.

Clients pointed at the proxy's URL reach the real catalog unchanged (method, path, headers, body), and get its
answer back, except for requests matching a planned ``Fault``:

- ``refuse``: answered with ``status`` (e.g. 503) without being forwarded: the catalog never saw it;
- ``lose_reply``: forwarded (the catalog acted on it), then answered with ``status`` (e.g. 504) instead of the
  catalog's reply: the client cannot tell whether it landed;
- ``drop``: forwarded, then the connection is closed without a reply (a timeout or a reset, seen from the client);
- ``hold``: forwarded or not (``forward``), then the reply is held until ``release`` (the client waits, as for a
  slow catalog; a test kills it meanwhile). ``held`` is set once a request is held.

The bearer tokens clients send are kept (``Plan.tokens``), so a test can check that no output shows one. Each fault
fires ``times`` times on requests whose method is ``method`` and whose path matches ``path`` (a regular
expression searched in the path). Every request is logged (method, path, status or the fault that took it).
"""

from __future__ import annotations

import http.client
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

from tests.support.services import LOOPBACK

_HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}
# A table's commit endpoint: POST /v1/{prefix}/namespaces/{namespace}/tables/{table}.
COMMIT = r"/namespaces/[^/]+/tables/[^/?]+$"
# A table's load endpoint: GET of the same path (query parameters allowed).
LOAD = r"/namespaces/[^/]+/tables/[^/?]+(\?.*)?$"


@dataclass
class Fault:
    """One planned failure (module doc)."""

    kind: str  # refuse | lose_reply | drop | hold
    method: str = "POST"
    path: str = COMMIT
    status: int = 503
    times: int = 1
    forward: bool = True  # hold: whether the request reaches the catalog before the reply is held
    after: int = 0  # fires only once this many faults of the plan have fired (e.g. reloads after a lost reply)

    def matches(self, method: str, path: str, fired: int) -> bool:
        return (
            self.times > 0 and fired >= self.after and method == self.method and re.search(self.path, path) is not None
        )


@dataclass
class Plan:
    """The faults in force and the requests seen; thread-safe."""

    faults: list[Fault] = field(default_factory=list)
    log: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, status or fault)
    tokens: set[str] = field(default_factory=set)  # bearer tokens clients sent (secrets no output may show)
    held: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    fired: int = 0

    def take(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.matches(method, path, self.fired):
                    fault.times -= 1
                    self.fired += 1
                    return fault
        return None

    def note_token(self, token: str) -> None:
        with self.lock:
            self.tokens.add(token)

    def record(self, method: str, path: str, outcome: str) -> None:
        with self.lock:
            self.log.append((method, path, outcome))


class RestFaultProxy:
    """A proxy on 127.0.0.1 (a free port) forwarding to ``upstream`` with the faults of ``plan``."""

    def __init__(self, upstream: str) -> None:
        target = urlparse(upstream)
        self.plan = Plan()
        plan = self.plan

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def _reply(self, status: int, body: bytes, headers: list[tuple[str, str]]) -> None:
                self.send_response_only(status)
                for key, value in headers:
                    if key.lower() not in _HOP_BY_HOP and key.lower() != "content-length":
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _error(self, status: int) -> None:
                body = b'{"error": {"message": "injected by the test proxy", "type": "ServiceFailure", "code": %d}}'
                self._reply(status, body % status, [("Content-Type", "application/json")])

            def _upstream(self, body: bytes | None) -> tuple[int, bytes, list[tuple[str, str]]]:
                connection = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                    connection.request(self.command, self.path, body=body, headers=headers)
                    response = connection.getresponse()
                    return response.status, response.read(), response.getheaders()
                finally:
                    connection.close()

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                authorization = self.headers.get("Authorization", "")
                if authorization.lower().startswith("bearer "):
                    plan.note_token(authorization[7:].strip())
                fault = plan.take(self.command, self.path)
                if fault is None:
                    status, payload, headers = self._upstream(body)
                    plan.record(self.command, self.path, str(status))
                    self._reply(status, payload, headers)
                    return
                if fault.kind == "refuse":
                    plan.record(self.command, self.path, f"refused {fault.status}")
                    self._error(fault.status)
                    return
                status: int | None = None
                if fault.kind != "hold" or fault.forward:
                    status, _, _ = self._upstream(body)
                plan.record(self.command, self.path, f"{fault.kind} (catalog answered {status})")
                if fault.kind == "lose_reply":
                    self._error(fault.status)
                elif fault.kind == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                else:  # hold
                    plan.held.set()
                    plan.release.wait(300)
                    self.close_connection = True
                    self.connection.shutdown(2)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward  # noqa: N815 - http.server names them so

        self._server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="rest-fault-proxy", daemon=True)
        self._thread.start()

    def arm(self, *faults: Fault) -> Plan:
        """A fresh plan with ``faults`` (the log starts empty)."""
        with self.plan.lock:
            self.plan.release.set()  # a request still held from an earlier plan goes
            self.plan.faults = list(faults)
            self.plan.log = []
            self.plan.fired = 0
            self.plan.held = threading.Event()
            self.plan.release = threading.Event()
        return self.plan

    @property
    def url(self) -> str:
        """The proxy's URL (the catalog's ``uri``)."""
        return f"http://{LOOPBACK}:{self._server.server_address[1]}"

    def stop(self) -> None:
        """Release any held request and stop serving."""
        self.plan.release.set()
        self._server.shutdown()
        self._server.server_close()
