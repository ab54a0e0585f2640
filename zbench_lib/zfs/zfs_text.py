"""OpenZFS before 2.3: the parseable text outputs, read into the records `-j` gives.

`zpool get -Hp` / `zfs get -Hp` print name, property, value, source separated by tabs;
`zpool status -P` prints the vdev tree indented under a NAME/STATE header. Each parser
returns exactly what its JSON twin returns (targets.parse_*_get_json,
layouts.parse_zpool_status_json), so callers never know which one was used.
"""

from __future__ import annotations

import re

from zbench_lib.core.errors import ZbenchError
from zbench_lib.zfs import draid
from zbench_lib.zfs.zfs_json import pick_name

# Group headings of `zpool status` (at the depth of the pool's own line), by our class name.
_GROUPS = {"logs": "log", "cache": "cache", "special": "special", "dedup": "dedup", "spares": "spare"}
_VDEV = re.compile(r"^(mirror|raidz[123]?|draid[123]?[^-]*|replacing|spare|indirect)-\d+$")


def _value(v: str):
    return int(v) if re.fullmatch(r"-?\d+", v) else v


def parse_get_hp(text: str, name: str | None = None) -> dict:
    """`zpool get -Hp all POOL` or `zfs get -Hp all NAME` -> {property: value}, integers as int."""
    rows = [line.split("\t") for line in text.splitlines() if line.strip()]
    bad = [r for r in rows if len(r) < 3]
    if bad or not rows:
        raise ZbenchError(f"not `get -Hp` output: {text.strip()[:200]!r}")
    name = pick_name({r[0] for r in rows}, name, "`get -Hp` output")
    return {r[1]: _value(r[2]) for r in rows if r[0] == name}


def _config_lines(text: str) -> list[tuple[int, str]]:
    """(indent, name) of every line of the config section, after the NAME header."""
    out, inside = [], False
    for raw in text.splitlines():
        if not inside:
            inside = raw.strip().startswith("NAME") and "STATE" in raw
            continue
        if not raw.strip():
            if out:
                break
            continue
        if not raw.startswith("\t") and not raw.startswith(" "):
            break                                   # "errors: ..." ends the section
        body = raw.lstrip("\t")
        out.append((len(body) - len(body.lstrip(" ")), body.split()[0]))
    return out


def _shape(name: str, children: int) -> tuple[str, int]:
    kind = draid.status_kind(name)      # 'draid2:4d:8c:1s-0' -> draid2, spare 'draid2-0-0' -> dspare
    if kind:
        return kind, 0 if kind == "dspare" else children
    m = _VDEV.match(name)
    if not m:
        return ("leaf", 0) if children == 0 else ("unknown", children)
    kind = m.group(1)
    if kind == "raidz":
        kind = "raidz1"
    return kind, children


def parse_zpool_status_text(text: str, pool: str | None = None) -> dict:
    """`zpool status -P POOL` -> the shape of layouts.parse_zpool_status_json:
    class -> list of (vdev type, number of children); single devices are ('leaf', 0)."""
    lines = _config_lines(text)
    if not lines:
        raise ZbenchError("zpool status: no config section found")
    top_indent, pool_name = lines[0]
    if pool is not None and pool_name != pool:
        raise ZbenchError(f"zpool status shows pool {pool_name!r}, not {pool!r}")
    out = {"data": [], "log": [], "cache": [], "special": []}
    cls, current, kids = "data", None, 0
    vdev_indent = top_indent + 2

    def close():
        if current is not None:
            out.setdefault(cls_of_current, []).append(_shape(current, kids))

    cls_of_current = cls
    for indent, name in lines[1:]:
        if indent == top_indent:                    # a group heading: logs, cache, ...
            close()
            current = None
            if name not in _GROUPS:
                raise ZbenchError(f"zpool status: unknown group {name!r}")
            cls = _GROUPS[name]
        elif indent == vdev_indent:                 # a top-level vdev of the current class
            close()
            current, kids, cls_of_current = name, 0, cls
        elif indent > vdev_indent and current is not None:
            if indent == vdev_indent + 2:
                kids += 1
        else:
            raise ZbenchError(f"zpool status: cannot place {name!r} (indent {indent})")
    close()
    return out


def parse_scan_text(text: str) -> str:
    """`zpool status` -> 'scrub:scanning', 'resilver:scanning' or 'none' (as _scan_state)."""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("scan:"):
            m = re.match(r"scan:\s+(scrub|resilver)\s+in progress", s)
            return f"{m.group(1)}:scanning" if m else "none"
    return "none"


def device_paths_text(text: str) -> set[str]:
    """Every device path in `zpool status -P -L` output (all pools)."""
    devices = set()
    for raw in text.splitlines():
        parts = raw.split()
        if raw.startswith("\t") and parts and parts[0].startswith("/"):
            devices.add(parts[0])
    return devices


def parse_pool_health_text(text: str) -> dict:
    """`zpool status -P POOL` -> {"state": pool state, "not_online": [(device path, state), ...]}.

    Plain text on purpose: the state column reads the same from OpenZFS 2.1 to 2.3, and
    a degraded pool is exactly when the health check must not depend on the JSON path.
    """
    state, bad = None, []
    for raw in text.splitlines():
        s = raw.strip()
        if s.startswith("state:"):
            state = s.split(":", 1)[1].strip()
        parts = raw.split()
        if raw.startswith("\t") and len(parts) >= 2 and parts[0].startswith("/") and parts[1] != "ONLINE":
            bad.append((parts[0], parts[1]))
    if state is None:
        raise ZbenchError("zpool status: no state line found")
    return {"state": state, "not_online": bad}
