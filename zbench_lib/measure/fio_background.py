"""fio as a foreground load while something else is timed (a resilver), stopped when that ends.

`BackgroundFio` starts a time-based job on the host and returns at once; `stop()` sends
fio SIGINT, on which fio ends its jobs and still writes its JSON report, and returns
what the load got: IOPS and bytes per direction over the time it ran. The job file,
fio's JSON and its stderr are kept in `local_dir` (raw, never overwritten).

The job runs as `sh -c 'echo $$ > fio.pid; exec fio ...'` so that the PID written is
fio's own: `stop()` signals exactly that process, never "every fio on the host".
"""

from __future__ import annotations

import time
from pathlib import Path

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.hosts.base import Host
from zbench_lib.measure.fio_parse import load_fio_json

_START = 'echo $$ > fio.pid; exec fio --output-format=json --output=fio.json job.fio'
_STOP = 'test -s fio.pid && kill -INT "$(cat fio.pid)"'
PID_WAIT_S = 30
STOP_WAIT_S = 120


def load_figures(data: dict) -> dict:
    """IOPS and bytes per direction summed over fio's jobs (a load has one group)."""
    jobs = data.get("jobs") or []
    out = {}
    for d in ("read", "write"):
        out[f"{d}_iops"] = round(sum(float(j.get(d, {}).get("iops", 0.0)) for j in jobs), 1)
        out[f"{d}_bytes"] = int(sum(int(j.get(d, {}).get("io_bytes", 0)) for j in jobs))
    out["runtime_s"] = round(max((float(j.get("job_runtime", 0)) for j in jobs), default=0.0) / 1000, 2)
    return out


class BackgroundFio:
    def __init__(self, host: Host, job_text: str, remote_dir: str, local_dir):
        self.host, self.job_text = host, job_text
        self.remote_dir = remote_dir.rstrip("/")
        self.local = Path(local_dir)
        if (self.local / "fio.json").exists():
            raise ConfigError(f"{self.local} already holds a fio run; raw results are never overwritten")
        self.proc = None

    def start(self) -> "BackgroundFio":
        self.host.run(["mkdir", "-p", self.remote_dir], timeout=60)
        self.host.run(["rm", "-f", f"{self.remote_dir}/fio.pid"], timeout=60)
        self.host.write_text(f"{self.remote_dir}/job.fio", self.job_text)
        self.proc = self.host.popen(["env", "-C", self.remote_dir, "sh", "-c", _START])
        deadline = time.monotonic() + PID_WAIT_S
        while not self.host.run(["test", "-s", f"{self.remote_dir}/fio.pid"], check=False, timeout=30).ok:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise ZbenchError(f"background fio did not start on {self.host.name}: "
                                  + " ".join((self.proc.stderr.read() if self.proc.poll() is not None else
                                              "no PID after 30 s").split())[:300])
            time.sleep(0.2)
        return self

    def stop(self) -> dict:
        """SIGINT to fio, wait for its report, keep the raw files; the load's figures."""
        if self.proc is None:
            raise ZbenchError("background fio was never started")
        self.host.run(["env", "-C", self.remote_dir, "sh", "-c", _STOP], check=False, timeout=60)
        try:
            _, err = self.proc.communicate(timeout=STOP_WAIT_S)
        except Exception:
            self.proc.kill()
            raise
        self.local.mkdir(parents=True, exist_ok=True)
        (self.local / "job.fio").write_text(self.job_text)
        (self.local / "fio.stderr").write_text(err or "")
        text = self.host.read_text(f"{self.remote_dir}/fio.json")
        (self.local / "fio.json").write_text(text)
        return load_figures(load_fio_json(text))
