"""ZFS module parameters (zfs_txg_timeout, zfs_dirty_data_max, ...) set for a block and put back.

`PARAMS` is the whitelist a study may vary, each with its bounds and meaning; `check_value`
turns a spec's value into the string written to /sys/module/zfs/parameters/<name>.
`ModuleParams(host, {name: value})` is a context manager: on entry it reads every current
value (all of them before writing any), writes the wanted ones, reads them back and refuses
a value ZFS did not take; on exit, whatever happened inside, it writes the previous values
back in reverse order with SIGINT/SIGTERM/SIGHUP held, so Ctrl-C cannot cut a restore short.

Names and types checked against zfs(4) of OpenZFS 2.1.16, 2.2.0 and 2.3.9 and their module
sources (ZFS_MODULE_PARAM). Release differences: the vdev queue limits and zfs_txg_timeout
are `int` in 2.1 and `uint` from 2.2; zfs_immediate_write_sz is `long` in 2.1 and `uint` in
2.3's source (its man page says s64); defaults that moved from 2.1 to 2.3: l2arc_write_max
and l2arc_write_boost 8 MiB -> 32 MiB, l2arc_headroom 2 -> 8, zil_slog_bulk 768 KiB -> 64 MiB.
l2arc_write_boost is gone after 2.3 (master, 2025): on such a host reading it fails, cleanly.
None of these is clamped by the kernel when written; zfs_arc_max is the exception that
matters: an invalid one is ignored (only a console warning), and writing 0 back does not
bring ZFS's default ARC size back (arc_tuning_update skips 0), so its effect is checked in
arcstats' c_max and its restore re-applies the previous c_max first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zbench_lib.core.errors import CommandError, ConfigError, ZbenchError
from zbench_lib.core.signals import signals_deferred, terminate_as_exit
from zbench_lib.core.sizes import format_size, parse_size
from zbench_lib.hosts.base import Host
from zbench_lib.zfs.zfsstats import parse_kstat

PARAM_DIR = "/sys/module/zfs/parameters"
ARCSTATS = "/proc/spl/kstat/zfs/arcstats"
MEMINFO = "/proc/meminfo"
KiB, MiB, GiB, TiB = 1024, 1024 ** 2, 1024 ** 3, 1024 ** 4
MIN_ARC_MAX = 64 * MiB          # include/sys/arc.h: MIN_ARC_MAX (DMU_MAX_ACCESS)
MAX_QUEUE = 1000                # zfs_vdev_max_active's default: the most any queue gets


@dataclass(frozen=True)
class Param:
    kind: str                   # "int", "bytes" or "bool"
    lo: int
    hi: int
    meaning: str
    unit: str = ""              # ints: what one unit is ("number of seconds")
    zero_default: bool = False  # 0 is accepted as well: "ZFS's own default"

    def expect(self) -> str:
        if self.kind == "bool":
            return "0 or 1 (or true/false)"
        if self.kind == "int":
            return f"an integer {self.unit + ' ' if self.unit else ''}{self.lo}..{self.hi}"
        span = f"a size {format_size(self.lo)}..{format_size(self.hi)} (bytes, or like 256M)"
        return f"0 (ZFS's default) or {span}" if self.zero_default else span


def _queue(meaning: str) -> Param:
    return Param("int", 1, MAX_QUEUE, meaning)


PARAMS: dict[str, Param] = {
    "zfs_txg_timeout": Param("int", 1, 3600, "seconds after which an open transaction group is "
                             "committed at the latest (default 5)", unit="number of seconds"),
    "zfs_dirty_data_max": Param("bytes", 1 * MiB, 1 * TiB, "dirty data limit: writes are delayed "
                                "as it fills and halt at it (default 10% of RAM, at most 4 GiB)"),
    "zfs_vdev_async_write_max_active": _queue("most txg-sync writes in flight per leaf vdev once "
                                              "much is dirty (default 10)"),
    "zfs_vdev_async_write_min_active": _queue("txg-sync writes in flight per leaf vdev while little "
                                              "is dirty (default 2)"),
    "zfs_vdev_sync_write_max_active": _queue("most sync (ZIL) writes in flight per leaf vdev (default 10)"),
    "zfs_vdev_sync_read_max_active": _queue("most sync reads in flight per leaf vdev (default 10)"),
    "zfs_vdev_async_read_max_active": _queue("most async (prefetch) reads in flight per leaf vdev "
                                             "(default 3)"),
    "zfs_vdev_max_active": Param("int", 1, MAX_QUEUE, "most I/Os in flight to each leaf vdev, "
                                 "all queues together (default 1000)"),
    "zfs_prefetch_disable": Param("bool", 0, 1, "1 turns predictive prefetch (zfetch) off"),
    "zfs_arc_max": Param("bytes", MIN_ARC_MAX, 64 * TiB, "ARC size limit; 0 = ZFS's default "
                         "(below the host's memory, checked on the host)", zero_default=True),
    "l2arc_write_max": Param("bytes", 64 * KiB, 16 * GiB, "most bytes written to L2ARC per feed "
                             "interval (default 8 MiB in 2.1, 32 MiB in 2.3)"),
    "l2arc_write_boost": Param("bytes", 0, 16 * GiB, "extra L2ARC feed bytes while the ARC is cold "
                               "(default as l2arc_write_max; not after 2.3)"),
    "l2arc_noprefetch": Param("bool", 0, 1, "1 keeps prefetched buffers out of L2ARC (default 1)"),
    "l2arc_headroom": Param("int", 0, 1000, "how far down the ARC lists L2ARC looks, in "
                            "l2arc_write_max units; 0 = all (default 2 in 2.1, 8 in 2.3)"),
    "zil_slog_bulk": Param("bytes", 0, 16 * GiB, "ZIL bytes per commit sent to a SLOG at sync "
                           "priority, the rest async (default 768 KiB in 2.1, 64 MiB in 2.3)"),
    "zfs_immediate_write_sz": Param("bytes", 0, 1 * GiB, "largest write copied into the ZIL; "
                                    "larger ones go indirect, as logbias=throughput (default 32K)"),
}
# Pairs that must stay ordered (vdev_queue_max_async_writes interpolates between them).
_ORDERED = (("zfs_vdev_async_write_min_active", "zfs_vdev_async_write_max_active"),)
_BOOLS = {"0": "0", "1": "1", "false": "0", "true": "1"}


def check_value(name, value, path: str) -> str:
    """The canonical string written to sysfs for `value`; ConfigError naming `path` otherwise."""
    param = PARAMS.get(name) if isinstance(name, str) else None
    if param is None:
        raise ConfigError(f"{path}: {name!r} is not a ZFS module parameter zbench sets "
                          f"(allowed: {', '.join(PARAMS)})")
    bad = ConfigError(f"{path}: expected {param.expect()}, got {value!r}")
    if param.kind == "bool":
        if not isinstance(value, (bool, int, str)) or str(value).strip().lower() not in _BOOLS:
            raise bad
        return _BOOLS[str(value).strip().lower()]
    if param.kind == "int":
        if isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value):
            number = int(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            raise bad
    else:
        try:
            number = parse_size(value, path)
        except ConfigError:
            raise bad from None
    if not (param.lo <= number <= param.hi or (param.zero_default and number == 0)):
        raise bad
    return str(number)


def parse_param_value(text: str) -> str:
    """A sysfs parameter file's content -> its value ('5\\n' -> '5')."""
    return text.strip()


def result_columns(record: dict) -> dict:
    """ModuleParams.record -> result columns: {'param_<name>': value read back}."""
    return {f"param_{name}": rec["readback"] for name, rec in record.items()}


def param_path(name: str) -> str:
    return f"{PARAM_DIR}/{name}"


class ModuleParams:
    """Set ZFS module parameters on `host` for the block; always put the previous ones back.

    `record` holds {name: {"before", "set", "readback"}} (plus "restored" after exit). An
    empty `wanted` touches nothing. Values are validated at construction, before any I/O.
    Writes go through `tee <file>` with the value on stdin, so a host that runs commands
    through sudo (SSHHost.use_privilege) writes as root like every other zbench command.
    """

    def __init__(self, host: Host, wanted: dict | None, *, where: str = "module_params"):
        self.host = host
        self.where = where
        self.wanted = {name: check_value(name, value, f"{where}.{name}")
                       for name, value in (wanted or {}).items()}
        self.record: dict[str, dict] = {}
        self._written: list[str] = []
        self._arc_c_max: str | None = None
        self._signals = None

    # --- context manager ---------------------------------------------------------
    def __enter__(self) -> "ModuleParams":
        if not self.wanted:
            return self
        self._signals = terminate_as_exit()
        self._signals.__enter__()
        try:
            self._apply()
        except BaseException:
            try:
                self._restore()
            finally:
                self._release_signals()
            raise
        return self

    def __exit__(self, *exc):
        try:
            self._restore()
        finally:
            self._release_signals()

    def _release_signals(self):
        if self._signals is not None:
            self._signals.__exit__(None, None, None)
            self._signals = None

    # --- apply and restore -------------------------------------------------------
    def _apply(self) -> None:
        """Read every current value, check, write, read back; ZbenchError if ZFS did not take one."""
        partners = [n for pair in _ORDERED if set(pair) & set(self.wanted) for n in pair]
        before = {name: self._read(name) for name in dict.fromkeys([*self.wanted, *partners])}
        self._check_order(before)
        self._check_memory()
        if "zfs_arc_max" in self.wanted:
            self._arc_c_max = self._c_max()
        self.record = {name: {"before": before[name], "set": value, "readback": ""}
                       for name, value in self.wanted.items()}
        for name, value in self.wanted.items():
            self._written.append(name)     # first: an interrupted tee may still have written
            self._write(name, value)
        refused = []
        for name, value in self.wanted.items():
            got = self.record[name]["readback"] = self._read(name)
            if got != value:
                refused.append(f"{name}: wanted {value}, read back {got}")
        arc_max = self.wanted.get("zfs_arc_max", "0")
        if arc_max != "0" and (c_max := self._c_max()) != arc_max:
            refused.append(f"zfs_arc_max: wanted {arc_max}, ARC c_max is {c_max} (ZFS ignores a "
                           f"limit under {format_size(MIN_ARC_MAX)}, at or under zfs_arc_min, or "
                           "not below the host's memory)")
        if refused:
            raise ZbenchError(f"{self.host.name}: ZFS did not take module parameter(s), previous "
                              f"values restored: {'; '.join(refused)}")

    def _restore(self) -> None:
        """Write the previous values back, newest first, with signals held; ZbenchError if one did
        not take (after trying them all)."""
        if not self._written:
            return
        failed = []
        with signals_deferred():
            for name in reversed(self._written):
                rec = self.record[name]
                try:
                    if name == "zfs_arc_max" and self._arc_c_max is not None:
                        # Writing 0 (or an ignored value) back would leave our limit in force.
                        self._write(name, self._arc_c_max)
                    self._write(name, rec["before"])
                    got = rec["restored"] = self._read(name)
                    if got != rec["before"]:
                        failed.append(f"{name}: wanted {rec['before']} back, read {got}")
                    if name == "zfs_arc_max" and self._arc_c_max is not None \
                            and (c_max := self._c_max()) != self._arc_c_max:
                        failed.append(f"zfs_arc_max: ARC c_max {c_max}, was {self._arc_c_max}")
                except ZbenchError as exc:
                    failed.append(f"{name}: {str(exc).splitlines()[0]}")
            self._written = []
        if failed:
            raise ZbenchError(f"{self.host.name}: could not restore ZFS module parameter(s), set "
                              f"them by hand: {'; '.join(failed)}")

    # --- checks --------------------------------------------------------------------
    def _check_order(self, before: dict) -> None:
        for lo_name, hi_name in _ORDERED:
            if lo_name in self.wanted or hi_name in self.wanted:
                lo = int(self.wanted.get(lo_name, before[lo_name]))
                hi = int(self.wanted.get(hi_name, before[hi_name]))
                if lo > hi:
                    raise ConfigError(f"{self.where}: {lo_name} ({lo}) must not exceed {hi_name} "
                                      f"({hi}; unset ones are {self.host.name}'s current values)")

    def _check_memory(self) -> None:
        big = {n: int(self.wanted[n]) for n in ("zfs_arc_max", "zfs_dirty_data_max")
               if n in self.wanted and self.wanted[n] != "0"}
        if not big:
            return
        total = _mem_total(self.host.read_text(MEMINFO))
        for name, value in big.items():
            if total is not None and value >= total:
                raise ConfigError(f"{self.where}.{name}: {format_size(value)} is not below "
                                  f"{self.host.name}'s memory ({format_size(total)})")

    # --- host I/O ------------------------------------------------------------------
    def _read(self, name: str) -> str:
        path = param_path(name)
        try:
            return parse_param_value(self.host.read_text(path))
        except CommandError as exc:
            raise ZbenchError(f"{self.host.name}: cannot read {path} (zfs module not loaded, or no "
                              f"{name} in this OpenZFS release?): exit {exc.returncode}") from exc

    def _write(self, name: str, value: str) -> None:
        self.host.run(["tee", param_path(name)], input=f"{value}\n", timeout=60)

    def _c_max(self) -> str:
        value = parse_kstat(self.host.read_text(ARCSTATS)).get("c_max")
        if value is None:
            raise ZbenchError(f"{self.host.name}: no c_max in {ARCSTATS}")
        return str(value)


def _mem_total(text: str) -> int | None:
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None
