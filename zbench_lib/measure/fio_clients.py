"""fio's client/server mode as the load engine: `fio --server` on each client node, one controller.

`FioServers` is the servers' lifecycle, a context manager: on entry it reads ``fio --version``
on the controller and every client and refuses a mismatch in one line (the controller and its
servers must speak one protocol version, and fio refuses to run across versions), refuses a
port that something already serves (a server left over from an earlier run is named, never
silently reused: it may be another release, another user's, or hold another job's options),
then starts each server daemonised (``fio --server=<ip>,<port> --daemonize=<pidfile>``, run in
the server's working directory, where relative paths of a job resolve), waits until its pid
listens on the port on its host and until the port answers from the controller. On exit,
also on an error, Ctrl-C or SIGTERM turned into SystemExit, it stops each server by the pid
in its pidfile, after checking the pid is still that fio (a pid is reused once its process
is gone), and waits until it is gone.

`run_clients` is the controller's one call: ``fio --output-format=json+ --output=fio.json
--client=<ip>,<port> <job> [--client=... <job>]``. The output options come first: fio passes
every option that follows a ``--client=`` on to that server, which would then write its own
fio.json in its directory. Each client gets its own job file (`client_job`): its logs carry
the client's label as prefix, because the controller names a client's logs after its hostname
only and several servers on one host would overwrite each other's, and its iops log is stamped
with the client's wall clock (``log_unix_epoch``): fio 3.33 reports no start per client, and
this log is where zbench reads it, and when each client did its I/O (`fio_client_json.stamped_logs`).
fio exits 0 when a client was unreachable or refused its job file and reports the others only,
so the run is checked for every client's report before it is returned.

Every command is an argument list (`hosts.base.Host`).
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from zbench_lib.core.errors import CommandError, ConfigError, ZbenchError
from zbench_lib.core.signals import signals_deferred
from zbench_lib.core.stopping import stop_by_cwd
from zbench_lib.hosts.base import Host
from zbench_lib.measure.client_aggregate import ClientAggregate, aggregate
from zbench_lib.measure.fio import estimate_timeout, fetch_tree
from zbench_lib.measure.fio_client_json import ClientStats, StampedLog, parse_client_json, stamped_logs

DEFAULT_PORT = 8765             # fio's own default
STAMP_INTERVAL_MS = 500         # the stamped iops log's interval (log_avg_msec)
START_WAIT_S = 15.0
STOP_WAIT_S = 15.0
_LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
_VERSION_RE = re.compile(r"^fio-\d+\.\d+\S*$")
# The lines of fio's chatter that say why a client failed (the rest is progress).
_COMPLAINT = re.compile(r"bad option|error|failed|refused|dropped|unable|no such|invalid", re.I)
# Connects from the controller host: the check is the path the controller will take.
_CONNECT = ("import socket, sys\n"
            "socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3])).close()")


@dataclass(frozen=True)
class ServerSpec:
    """One client node's fio server: where it runs, the address it listens on, its port."""
    host: Host
    address: str        # the IP it binds to, as the controller reaches it
    port: int
    workdir: str        # on host: its pidfile, and its working directory
    label: str          # names the client's job file and logs (c0, c1, ...)
    # (address, port) the controller connects to when a forward lies between it and the server
    # (a lab client behind QEMU's user networking: hosts.lab_clients); else address and port
    reach: tuple[str, int] | None = None

    @property
    def listen(self) -> str:
        """`--server=`: where the server listens, on its own host."""
        return f"{self.address},{self.port}"

    @property
    def endpoint(self) -> str:
        """`--client=` and fio's report spell a client host,port: as the controller reaches it."""
        address, port = self.reach or (self.address, self.port)
        return f"{address},{port}"

    @property
    def pidfile(self) -> str:
        return f"{self.workdir.rstrip('/')}/fio-server.pid"

    def argv(self) -> list[str]:
        return ["env", "-C", self.workdir, "fio", f"--server={self.listen}", f"--daemonize={self.pidfile}"]


@dataclass(frozen=True)
class ClientsRun:
    """A controller run: its raw directory, the parsed report and each client's stamped iops log."""
    local_dir: Path
    stats: ClientStats
    logs: dict[str, StampedLog]     # {endpoint: its stamped iops log, on the client's clock}
    endpoints: tuple[str, ...]
    duration_s: float

    def aggregate(self, direction: str) -> ClientAggregate:
        return aggregate(self.stats, direction, self.logs, self.endpoints)


@dataclass(frozen=True)
class ClientLoad:
    """Started servers and what each client's job runs on: a run's load from its first `count` clients."""
    servers: FioServers
    files: dict[str, str]       # {label: the file fio uses on that client}
    controller: Host            # where `fio --client` runs (the controller: it reaches every forward)
    controller_dir: str         # on the controller: each run's job files and report, in a directory of its own
    # {label: {"offset": bytes, "size": bytes}}: each client's region of one shared device (an iSCSI
    # LUN: zfs/iscsi_share.region), on top of the run's parameters; none where each has a file of its own
    regions: dict[str, dict] = field(default_factory=dict)

    def labels(self, count: int) -> list[str]:
        """The first `count` clients' labels, in the servers' order."""
        labels = [s.label for s in self.servers.specs]
        if not 1 <= count <= len(labels):
            raise ConfigError(f"a run of {count} client(s) on a datastore mounted by {len(labels)}")
        return labels[:count]

    def hosts(self, labels: list[str]) -> dict[str, Host]:
        by_label = {s.label: s.host for s in self.servers.specs}
        return {label: by_label[label] for label in labels}

    def endpoints(self, labels: list[str]) -> dict[str, str]:
        by_label = {s.label: s.endpoint for s in self.servers.specs}
        return {label: by_label[label] for label in labels}


def parse_version(text: str) -> str:
    """'fio-3.33' from `fio --version`'s output; ConfigError if it is not one."""
    version = text.strip()
    if not _VERSION_RE.match(version):
        raise ConfigError(f"`fio --version` printed {version[:60]!r}, not a fio release")
    return version


def check_versions(versions: dict[str, str]) -> str:
    """The one fio release of the controller and every client ({who: version}), or ConfigError
    in one line naming each release and who has it."""
    releases: dict[str, list[str]] = {}
    for who, version in versions.items():
        releases.setdefault(version, []).append(who)
    if len(releases) != 1:
        said = "; ".join(f"{v} on {', '.join(w)}" for v, w in releases.items())
        raise ConfigError(f"fio releases differ ({said}): fio's client and servers must run one "
                          "release (it refuses mismatched protocol versions); install the same fio everywhere")
    return next(iter(releases))


def host_version(host: Host) -> str:
    try:
        res = host.run(["fio", "--version"], timeout=60)
    except CommandError as exc:
        raise ConfigError(f"fio not runnable on {host.name} (exit {exc.returncode}): install fio") from None
    return parse_version(res.stdout)


def listeners(host: Host, port: int) -> list[tuple[str, int]]:
    """(command, pid) of each process listening on TCP `port` on `host` (ss; root sees all)."""
    res = host.run(["ss", "-Hltnp", "sport", "=", f":{port}"], timeout=60)
    found = []
    for line in res.stdout.splitlines():
        found += [(name, int(pid)) for name, pid in re.findall(r'\("([^"]+)",pid=(\d+),', line)]
        if "users:" not in line and line.strip():
            found.append(("?", 0))      # listening, owner not visible to this user
    return found


def process_argv(host: Host, pid: int) -> list[str] | None:
    """The command line of a live `pid` on `host`, None if it is gone (a zombie is gone)."""
    stat = host.run(["cat", f"/proc/{pid}/stat"], check=False, timeout=60)
    if not stat.ok or stat.stdout.rsplit(")", 1)[-1].split()[:1] == ["Z"]:
        return None
    res = host.run(["cat", f"/proc/{pid}/cmdline"], check=False, timeout=60)
    return [a for a in res.stdout.split("\0") if a] if res.ok else None


def _is_server(argv: list[str] | None, spec: ServerSpec) -> bool:
    return bool(argv) and Path(argv[0]).name == "fio" and f"--server={spec.listen}" in argv


def refuse_leftover(spec: ServerSpec) -> None:
    """ConfigError if `spec`'s port is already served on its host (a leftover server is named)."""
    held = listeners(spec.host, spec.port)
    if held:
        who = ", ".join(f"{name} pid {pid}" if pid else name for name, pid in held)
        raise ConfigError(f"port {spec.port} on {spec.host.name} is already served ({who}): a fio server left "
                          f"over from an earlier run? zbench does not reuse it; stop it or choose another port")


def _read_pid(spec: ServerSpec) -> int | None:
    res = spec.host.run(["cat", spec.pidfile], check=False, timeout=60)
    text = res.stdout.strip() if res.ok else ""
    return int(text) if text.isdigit() else None


def start_server(spec: ServerSpec, wait_s: float = START_WAIT_S) -> int:
    """Start `spec`'s daemon and return its pid once it listens on its port on its host."""
    spec.host.run(["mkdir", "-p", spec.workdir], timeout=60)
    spec.host.run(["rm", "-f", spec.pidfile], timeout=60)
    res = spec.host.run(spec.argv(), check=False, timeout=60)
    deadline = time.monotonic() + wait_s
    while True:
        pid = _read_pid(spec)
        if pid and any(p == pid for _, p in listeners(spec.host, spec.port)):
            return pid
        if time.monotonic() > deadline:
            tail = " ".join((res.stderr or res.stdout).split())[:200]
            raise ZbenchError(f"fio server {spec.label} did not start listening on {spec.listen} "
                              f"on {spec.host.name} within {wait_s:.0f} s" + (f": {tail}" if tail else ""))
        time.sleep(0.1)


def check_answers(controller: Host, spec: ServerSpec, timeout_s: float = 5.0) -> None:
    """ZbenchError unless `spec`'s port takes a connection from the controller."""
    address, port = spec.reach or (spec.address, spec.port)
    res = controller.run(["python3", "-c", _CONNECT, address, str(port), str(timeout_s)],
                         check=False, timeout=timeout_s + 30)
    if not res.ok:
        why = (res.stderr.strip().splitlines() or ["no answer"])[-1]
        raise ZbenchError(f"fio server {spec.label} at {spec.endpoint} does not answer from "
                          f"{controller.name}: {why}")


def server_processes(spec: ServerSpec, pid: int | None) -> list[int]:
    """The live processes of `spec`'s server: its pid, what it forked, and whatever of it
    still listens on the port, each checked to be this server's fio.

    The daemon forks a handler for each connection, and the handler its jobs; a handler
    outlives the controller's run by a moment and keeps the listening socket, so stopping
    the daemon alone left the port served (and after the daemon died, by a process whose
    parent is gone, found only through the port).
    """
    found = [pid] if pid else []
    frontier = list(found)
    while frontier:
        res = spec.host.run(["pgrep", "-P", ",".join(map(str, frontier))], check=False, timeout=60)
        frontier = [int(x) for x in res.stdout.split() if x.isdigit() and int(x) not in found]
        found += frontier
    found += [p for _, p in listeners(spec.host, spec.port) if p and p not in found]
    return [p for p in found if _is_server(process_argv(spec.host, p), spec)]


def stop_server(spec: ServerSpec, pid: int | None, wait_s: float = STOP_WAIT_S) -> str:
    """Stop the server (by the pid of its pidfile) and what it forked; returns what happened."""
    procs = server_processes(spec, pid or _read_pid(spec))
    for sig in ("-TERM", "-KILL"):
        if not procs:
            break
        spec.host.run(["kill", sig, *map(str, procs)], check=False, timeout=60)
        deadline = time.monotonic() + wait_s
        alive = procs
        while alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = [p for p in alive if _is_server(process_argv(spec.host, p), spec)]
        if not alive:
            spec.host.run(["rm", "-f", spec.pidfile], check=False, timeout=60)
            return f"{spec.label}: pid(s) {' '.join(map(str, procs))} stopped ({sig[1:]})"
        procs = alive
    if procs:
        return f"{spec.label}: pid(s) {' '.join(map(str, procs))} still running after SIGKILL"
    spec.host.run(["rm", "-f", spec.pidfile], check=False, timeout=60)
    return f"{spec.label}: already gone"


class FioServers:
    """The clients' fio servers for the length of a `with` block (see the module's docstring)."""

    def __init__(self, specs: list[ServerSpec], controller: Host):
        labels = [s.label for s in specs]
        endpoints = [(s.host.name, s.endpoint) for s in specs]
        if not specs or len(set(labels)) != len(labels) or len(set(endpoints)) != len(endpoints):
            raise ConfigError(f"fio clients need distinct labels and endpoints, got {labels} at {endpoints}")
        bad = [lab for lab in labels if not _LABEL_RE.match(lab)]
        if bad:
            raise ConfigError(f"a client label is a plain name (letters, digits, _ and -), got {bad}")
        self.specs, self.controller = list(specs), controller
        self.pids: dict[str, int | None] = {}
        self.version = ""
        self.stopped: list[str] = []

    def __enter__(self) -> "FioServers":
        versions = {f"the controller ({self.controller.name})": host_version(self.controller)}
        versions.update({f"{s.label} ({s.host.name})": host_version(s.host) for s in self.specs})
        self.version = check_versions(versions)
        for spec in self.specs:
            refuse_leftover(spec)
        try:
            for spec in self.specs:
                self.pids[spec.label] = None      # known before it starts: stop() looks for its pidfile
                self.pids[spec.label] = start_server(spec)
            for spec in self.specs:
                check_answers(self.controller, spec)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> bool:
        self.stop()
        return False

    def stop(self) -> list[str]:
        """Stop every server this block started (a second signal waits until they are)."""
        with signals_deferred():
            for spec in self.specs:
                if spec.label in self.pids:
                    try:
                        self.stopped.append(stop_server(spec, self.pids.pop(spec.label)))
                    except ZbenchError as exc:    # one host's failure does not leave the others running
                        print(f"zbench: stopping fio server {spec.label}: {exc}", file=sys.stderr, flush=True)
        return self.stopped


def client_job(job_text: str, label: str, interval_ms: int = STAMP_INTERVAL_MS) -> str:
    """`job_text` for the client `label`: its logs prefixed with the label, and an iops log
    stamped on the client's wall clock every `interval_ms` (the start zbench reads)."""
    if not _LABEL_RE.match(label):
        raise ConfigError(f"a client label is a plain name (letters, digits, _ and -), got {label!r}")
    lines = [ln for ln in job_text.splitlines()
             if not re.match(r"^\s*(write_iops_log|log_avg_msec|log_unix_epoch)\s*=", ln)]
    # Other logs keep their options but take the label: the controller would overwrite them too.
    lines = [re.sub(r"^(\s*write_(?:bw|lat|hist)_log\s*=).*$", rf"\g<1>{label}", ln) for ln in lines]
    stamp = [f"write_iops_log={label}", f"log_avg_msec={interval_ms}", "log_unix_epoch=1"]
    at = next((i + 1 for i, ln in enumerate(lines) if ln.strip() == "[global]"), None)
    lines = lines[:at] + stamp + lines[at:] if at is not None else ["[global]", *stamp, *lines]
    return "\n".join(lines) + "\n"


def client_argv(loads: list[tuple[str, str]]) -> list[str]:
    """The controller's command for (endpoint, job file) pairs: output options first (after a
    ``--client=`` they would be passed on to that server)."""
    argv = ["fio", "--output-format=json+", "--output=fio.json"]
    for endpoint, job in loads:
        argv += [f"--client={endpoint}", job]
    return argv


def run_clients(controller: Host, servers: FioServers, jobs: dict[str, str], remote_dir: str, local_dir,
                timeout: float | None = None, interval_ms: int = STAMP_INTERVAL_MS) -> ClientsRun:
    """Run `jobs` ({label: job text}) on the started `servers` in one controller call.

    The job files, fio.json and the logs are kept in `local_dir` (raw, never overwritten).
    Raises ZbenchError when fio fails, a job reports an error, or a client is missing from
    fio's report (fio exits 0 then).
    """
    local = Path(local_dir)
    if (local / "fio.json").exists():
        raise ConfigError(f"{local} already holds a fio run; raw results are never overwritten")
    by_label = {s.label: s for s in servers.specs}
    unknown = sorted(set(jobs) - set(by_label))
    if unknown or not jobs:
        raise ConfigError(f"jobs for unknown client(s) {unknown or '(none given)'}; clients: {sorted(by_label)}")
    texts = {label: client_job(text, label, interval_ms) for label, text in jobs.items()}
    remote_dir = remote_dir.rstrip("/")
    controller.run(["mkdir", "-p", remote_dir], timeout=60)
    for label, text in texts.items():
        controller.write_text(f"{remote_dir}/job-{label}.fio", text)
    argv = ["env", "-C", remote_dir, *client_argv([(by_label[lab].endpoint, f"job-{lab}.fio") for lab in texts])]
    timeout = max(estimate_timeout(t) for t in texts.values()) if timeout is None else timeout
    # On a signal the controller is stopped on its host; on SIGTERM it tells its servers to quit.
    res = controller.run(argv, timeout=timeout, check=False, stop_with=stop_by_cwd(remote_dir))
    local.mkdir(parents=True, exist_ok=True)
    (local / "fio.stderr").write_text(res.stderr)
    with contextlib.suppress(ZbenchError, OSError):
        fetch_tree(controller, remote_dir, ["."], local, exclude=())
    return _checked(local, res, {by_label[lab].endpoint: lab for lab in texts}, controller.name, interval_ms)


def _checked(local: Path, res, labels: dict[str, str], host: str, interval_ms: int) -> ClientsRun:
    """The run's parsed report, once every client is in it and no job reports an error."""
    try:
        text = (local / "fio.json").read_text()
    except OSError:
        text = ""
    # What the servers said (a refused option, say) precedes the JSON in the output file.
    said_before = text[:text.find("{")] if "{" in text else text
    said = [ln.strip() for ln in res.stderr.splitlines() + said_before.splitlines() if ln.strip()]
    tail = " | ".join(([ln for ln in said if _COMPLAINT.search(ln)] or said)[-4:])
    try:
        stats = parse_client_json(text)
    except ZbenchError as exc:
        raise ZbenchError(f"fio --client on {host} (exit {res.returncode}) left no usable report ({exc})"
                          + (f": {tail}" if tail else "")) from None
    missing = [f"{lab} ({ep})" for ep, lab in labels.items() if ep not in stats.endpoints()]
    failed = [f"{j.endpoint} job {j.jobname!r} error {j.error}" for j in stats.jobs if j.error]
    if missing or failed or res.returncode != 0:
        said = "; ".join(filter(None, [f"no report from {', '.join(missing)}" if missing else "",
                                       ", ".join(failed), f"exit {res.returncode}" if res.returncode else ""]))
        raise ZbenchError(f"fio --client on {host}: {said}" + (f": {tail}" if tail else ""))
    return ClientsRun(local, stats, stamped_logs(local, labels, interval_ms), tuple(labels), res.duration_s)
