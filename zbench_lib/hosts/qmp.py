"""A minimal QMP client (QEMU Machine Protocol), kept for fault injection."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from zbench_lib.core.errors import ZbenchError


class QMPClient:
    def __init__(self, path: Path, timeout: float = 10):
        self.path = str(path)
        self.timeout = timeout
        self.sock = None
        self._buf = b""

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

    def command(self, name: str, **arguments):
        msg = {"execute": name}
        if arguments:
            msg["arguments"] = arguments
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = self._read()
            if "event" in reply:
                continue
            if "error" in reply:
                raise ZbenchError(f"QMP {name} failed: {reply['error'].get('desc')}")
            return reply.get("return")
