"""What an imported file's path (or the map) says about it, each field typed and checked.

A field named like a factor of the registry (`sweeps/spec/factors.py`: disks, layout, volblocksize,
numjobs, ...) is checked by that factor's own check, and lands in that factor's result column (disks in
``total_disks``, volblocksize in ``volblocksize_bytes``): "raidz9" or "17k" is refused as a spec refuses
it. A layout with its disks (or width and vdevs) gives the layout's columns as a planned cell has them
(width, vdevs, data_disks, total_disks, layout_label), from its family's record. Two names are not the
registry's checks: ``zfs``, whose registry check allows only the releases the lab builds, takes any
OpenZFS release a host ran ("2.2.2"); ``rep`` is the repetition's number (files of one configuration
are its repetitions, numbered by it where given), and ``workload`` names the workload. Any other name is a
user label (a kernel, a branch, a controller): kept as ``label_<name>`` (the analysis groups and
compares along such columns: analysis/data/columns.py keeps the same prefix).

A path's text is typed before its check: digits are an integer ("4" disks), anything else is kept as
written ("16k", "raidz2", "2.3"). A map's YAML values come typed already.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from zbench_lib.core.errors import ConfigError
from zbench_lib.sweeps.spec.factors import BY_NAME
from zbench_lib.sweeps.spec.raw_cells import RAW
from zbench_lib.sweeps.spec.sweep_spec import SURFACES, layout_value
from zbench_lib.sweeps.spec.values import fail, integer, name as plain_name
from zbench_lib.zfs import families
from zbench_lib.zfs.layouts import Layout

LABEL_PREFIX = "label_"             # analysis/data/columns.LABEL_PREFIX (a test keeps the two equal)
_LABEL_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
_RELEASE = re.compile(r"\d+\.\d+(\.\d+)?")
_MAX_LABEL = 64
# What a layout's columns are made of: read here, never a column of their own
_SHAPE = ("layout", "disks", "width", "vdevs", "mirror_width")


@dataclass(frozen=True)
class FileFields:
    """One file's fields, checked: the result columns they give, its repetition number, the names given."""
    columns: dict = field(default_factory=dict)     # result column -> value (a factor's column, a label's)
    rep: int | None = None
    names: tuple[str, ...] = ()                     # the field names as given, in order


def typed(text):
    """A path's text as a spec would hold it: digits are an integer, anything else the text itself."""
    return int(text) if isinstance(text, str) and re.fullmatch(r"\d{1,18}", text) else text


def _release(v, path: str) -> str:
    v = str(v)
    if not _RELEASE.fullmatch(v):
        fail(path, f"expected an OpenZFS release like 2.2 or 2.2.2, got {v!r}")
    return v


def _label(name: str, v) -> str:
    if not _LABEL_NAME.fullmatch(name):
        raise ConfigError(f"{name!r} is not a label name (lowercase letters, digits and '_', from a letter)")
    text = str(v)
    if not text or len(text) > _MAX_LABEL or not text.isprintable():
        raise ConfigError(f"{name}: a label's value is 1-{_MAX_LABEL} printable characters, got {text[:40]!r}")
    return text


def _factor(name: str, v, surface: str | None) -> tuple[str, object]:
    """(column, level) of a registry factor's field, checked as a spec checks it."""
    factor = BY_NAME[name]
    refused = factor.refuses(surface) if surface else None
    if refused:
        raise ConfigError(refused)
    if name == "zfs":
        return factor.column, _release(v, name)
    return factor.column, factor.check(v, name)


def _layout_columns(given: dict, pool: dict) -> dict:
    """The layout's columns from its family and disks (or width and vdevs), as a planned cell has them;
    `pool` holds the other checked columns (its ashift and log devices)."""
    if "layout" not in given:
        return {"total_disks": integer(given["disks"], "disks", 1, 1024)} if "disks" in given else {}
    lay = layout_value(given["layout"], "layout")
    disks = integer(given["disks"], "disks", 1, 1024) if "disks" in given else None
    if lay["family"] == RAW:
        return {"layout": RAW, **({"data_disks": disks, "total_disks": disks} if disks else {})}
    if "width" in lay or "width" in given or "mirror_width" in given:
        width = lay.get("width") or integer(given.get("width", given.get("mirror_width")), "width", 1, 1024)
        vdevs = lay.get("vdevs") or integer(given.get("vdevs", 1), "vdevs", 1, 1024)
    elif disks:
        width, vdevs = families.get(lay["family"]).shape(disks, {k: given[k] for k in given if k == "mirror_width"},
                                                          lay)
    else:
        return {"layout": lay["family"]}
    layout = Layout(lay["family"], width, vdevs, ashift=pool.get("ashift", 12), log=pool.get("log", 0),
                    draid_data=lay.get("data", 0), draid_spares=lay.get("spares", 0)).validate()
    return {"layout": layout.family, "width": layout.width, "vdevs": layout.vdevs, "data_disks": layout.data_disks,
            "total_disks": layout.total_disks, "layout_label": layout.describe(), **layout.fam.factors(layout)}


def _one(name: str, v, surface: str | None, out: dict) -> None:
    if name == "workload":
        out["workload"] = plain_name(str(v), "workload")
    elif name in BY_NAME and name not in _SHAPE:
        column, level = _factor(name, typed(v), surface)
        out[column] = level
    elif name not in BY_NAME:
        out[LABEL_PREFIX + name] = _label(name, v)


def check_fields(given: dict, surface: str | None = None) -> FileFields:
    """`given` ({name: text or value}) checked; ConfigError in one line for the first field refused."""
    try:
        return _checked(tuple(given.items()), surface)
    except TypeError:                       # a map's unhashable value (a list): checked uncached, and refused
        return _checked.__wrapped__(tuple(given.items()), surface)


@lru_cache(maxsize=4096)
def _checked(items: tuple, surface: str | None) -> FileFields:
    """`check_fields` of (name, value) pairs: thousands of files share a few configurations."""
    given = dict(items)
    values = {k: typed(v) for k, v in given.items()}
    out: dict = {}
    for name, v in given.items():
        if name != "rep":
            _one(name, v, surface, out)
    shape = {k: values[k] for k in _SHAPE if k in values}
    for k in ("width", "vdevs", "mirror_width"):
        if k in shape and "layout" not in shape:
            _factor(k, shape[k], surface)       # checked alone; its column comes with a layout
    out.update(_layout_columns(shape, out))
    rep = integer(values["rep"], "rep", 1, 10 ** 6) if "rep" in values else None
    return FileFields(out, rep, tuple(given))


def column_of(name: str) -> str | None:
    """The result column a field's name fills (disks: total_disks, volblocksize: volblocksize_bytes, a label:
    label_<name>); None for rep, which numbers repetitions."""
    if name == "rep":
        return None
    if name == "workload":
        return "workload"
    if name in BY_NAME:
        return "width" if name == "mirror_width" else BY_NAME[name].column
    return LABEL_PREFIX + name


def check_surface(surface: str | None) -> str | None:
    """The surface an import declares (zvol, dataset, fs-on-zvol, raw), or None: not recorded."""
    if surface is not None and surface not in SURFACES:
        raise ConfigError(f"surface {surface!r}: expected one of {', '.join(SURFACES)}")
    return surface

