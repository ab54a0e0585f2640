"""A minimal QMP client (QEMU Machine Protocol), kept for fault injection."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from zbench_lib.core.errors import ZbenchError


class QMPClient:
    def __init__(self, path: Path, timeout: float = 10):
        self.path = str(path)
        self.timeout = timeout
        self.sock = None
        self._buf = b""
        self.events: list[dict] = []       # events that arrived while a command waited

    def __enter__(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)
        self._read()                       # greeting
        self.command("qmp_capabilities")
        return self

    def __exit__(self, *exc):
        self.sock.close()

    def _read(self) -> dict:
        while b"\n" not in self._buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ZbenchError("QMP socket closed")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def wait_event(self, name: str, match=lambda data: True, timeout: float = 30.0) -> dict:
        """The next event `name` whose data satisfies `match` (events seen before are not kept)."""
        for msg in self.events:
            if msg.get("event") == name and match(msg.get("data", {})):
                self.events.remove(msg)
                return msg
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                msg = self._read()
            except socket.timeout:
                break
            if msg.get("event") == name and match(msg.get("data", {})):
                return msg
        raise ZbenchError(f"QMP: no {name} event within {timeout:.0f} s")

    def command(self, name: str, **arguments):
        msg = {"execute": name}
        if arguments:
            msg["arguments"] = arguments
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = self._read()
            if "event" in reply:
                self.events.append(reply)
                continue
            if "error" in reply:
                raise ZbenchError(f"QMP {name} failed: {reply['error'].get('desc')}")
            return reply.get("return")
