"""The resilver study: how long a pool takes to rebuild one lost disk, idle and under load.

A sweep with `faults: {kind: remove, resilver: true, ...}` records in events.jsonl a
`resilver` event per timed resilver (`zpool replace` of the lost disk by a new drive,
timed until `zpool wait -t resilver` returned; with `resilver_load` a second one under a
foreground fio load) and a `resilver failed` event where none could be timed. Everything
here reads those events, never a host. The paired design and its limits: docs/methods.md §14.

    resilver_table(sweep_dir)    one row per resilver; a failed one keeps its row, its reason in
                                 `not_judged` (as does a timing without seconds or a pool left unhealthy)
    load_slowdown(table)         loaded / idle seconds per pool; a pool without both halves keeps
                                 its row with ratio NaN and the reason
    slowdown_lines(slowdown)     a sentence per layout (and fill level): the paired slowdown, or
                                 "not judged" with the reasons
    resilver_figure(table)       seconds by layout, a marker per resilver, colour idle / under load,
                                 symbol per fill level
    resilver_section(table)      the report's Resilver section (HTML) and its figure; '' without events
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from zbench_lib.analysis.figures.plot_base import LAYOUT_ORDER, PALETTE, add_caption
from zbench_lib.analysis.data.sweep_data import read_events
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.events import Event
from zbench_lib.core.sizes import zpool_bytes

EVENTS = (Event.RESILVER, Event.RESILVER_FAILED)
COLUMNS = ["pool_id", "pool", "layout", "fill", "pool_replicate", "order", "under_load", "load", "seconds",
           "resilvered", "resilvered_bytes", "allocated_bytes", "capacity_pct", "rate_mib_s", "load_read_iops",
           "load_write_iops", "state_before", "health_after", "device", "replacement", "not_judged"]
SLOWDOWN_COLUMNS = ["pool_id", "layout", "fill", "load", "idle_seconds", "loaded_seconds", "ratio", "reason"]
_FLOATS = ("seconds", "capacity_pct", "rate_mib_s", "load_read_iops", "load_write_iops")
_INTS = ("pool_replicate", "order", "resilvered_bytes", "allocated_bytes")
_FAMILY = re.compile(r"(stripe|mirror|raidz\d?|draid\d?)")
CONDITION_COLORS = {"idle": PALETTE[7], "under load": PALETTE[3], "not recorded": PALETTE[8]}
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star")
TITLE = "Time to resilver one disk"
METHOD = ("One marker per resilver: the pool lost a disk mid-run, a new drive (an unused lab disk) replaced it "
          "(zpool replace) and the resilver was timed until zpool wait -t resilver returned; under load, a "
          "foreground fio job ran meanwhile.")


def _number(v) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _missing(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _pools(path: Path, events: list[dict]) -> dict:
    """pool_id -> layout, fill and replicate, from the plan and the `pool created` events."""
    try:
        plan = json.loads((path / "plan.json").read_text())
        pools = {p["pool_id"]: {"layout": p.get("label"), "fill": p.get("fill")} for p in plan.get("pools", [])}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        pools = {}
    for e in events:
        if e.get("event") == Event.POOL_CREATED and e.get("pool_id"):
            known = pools.setdefault(e["pool_id"], {})
            known.update({k: e[k] for k in ("layout", "pool_replicate") if e.get(k) is not None})
    return pools


def _reason(row: dict) -> str | None:
    """Why a timed resilver is not judged (None when it is)."""
    if row["seconds"] is None:
        return "wall time of the resilver not recorded"
    if row["seconds"] <= 0:
        return f"recorded wall time {row['seconds']:g} s is not a duration"
    if row["health_after"] not in (None, "ONLINE"):
        return f"pool {row['health_after']} after the resilver, not ONLINE"
    return None


def _row(e: dict, pools: dict) -> dict:
    row = {c: e.get(c) for c in COLUMNS}
    for k, v in pools.get(e.get("pool_id"), {}).items():
        if row.get(k) is None:
            row[k] = v
    row["under_load"] = e.get("under_load") if isinstance(e.get("under_load"), bool) else None
    if e.get("event") == Event.RESILVER_FAILED:
        row.update(seconds=None, not_judged=f"resilver failed: {e.get('error') or 'no error recorded'}")
        return row
    secs, nbytes = _number(e.get("seconds")), _number(e.get("resilvered_bytes"))
    nbytes = nbytes if nbytes is not None else zpool_bytes(e.get("resilvered"))
    row.update(seconds=secs, resilvered_bytes=nbytes,
               rate_mib_s=nbytes / secs / 2 ** 20 if nbytes is not None and secs and secs > 0 else None)
    row["not_judged"] = _reason(row)
    return row


def resilver_table(sweep_dir) -> pd.DataFrame:
    """One row per `resilver` / `resilver failed` event of the sweep (columns: `COLUMNS`)."""
    path = Path(sweep_dir)
    events = read_events(path)
    mine = [e for e in events if e.get("event") in EVENTS]
    pools = _pools(path, events) if mine else {}
    df = pd.DataFrame([_row(e, pools) for e in mine], columns=COLUMNS)
    for c in _FLOATS:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    for c in _INTS:
        df[c] = pd.to_numeric(df[c], errors="coerce").round().astype("Int64")
    df["under_load"] = df["under_load"].astype("boolean")
    return df.sort_values(["pool_id", "order"], kind="stable", na_position="last").reset_index(drop=True)


def _judged(g: pd.DataFrame, loaded: bool):
    ok = g[g["not_judged"].isna() & g["under_load"].eq(loaded).fillna(False).astype(bool)]
    return ok.iloc[0] if len(ok) else None


def _first(g: pd.DataFrame, col: str):
    values = g[col].dropna()
    return values.iloc[0] if len(values) else None


def load_slowdown(table: pd.DataFrame) -> pd.DataFrame:
    """Per pool: seconds under load / seconds idle, both from that pool; otherwise the reason."""
    rows = []
    for pool_id, g in table.groupby("pool_id", sort=True, dropna=False):
        idle, loaded = _judged(g, False), _judged(g, True)
        row = dict(pool_id=pool_id, layout=_first(g, "layout"), fill=_first(g, "fill"),
                   load=None if loaded is None else loaded["load"],
                   idle_seconds=None if idle is None else idle["seconds"],
                   loaded_seconds=None if loaded is None else loaded["seconds"], ratio=None, reason=None)
        if idle is not None and loaded is not None:
            row["ratio"] = loaded["seconds"] / idle["seconds"]
        else:
            failed = [str(r) for r in g["not_judged"].dropna().unique()]
            gaps = [what for what, r in (("no idle resilver", idle), ("no resilver under load", loaded)) if r is None]
            row["reason"] = "; ".join(failed or gaps)
        rows.append(row)
    out = pd.DataFrame(rows, columns=SLOWDOWN_COLUMNS)
    for c in ("idle_seconds", "loaded_seconds", "ratio"):
        out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
    return out


def _layout_key(label) -> tuple:
    m = _FAMILY.search(str(label))
    family = {"raidz": "raidz1"}.get(m.group(1), m.group(1)) if m else ""
    return (LAYOUT_ORDER.index(family) if family in LAYOUT_ORDER else len(LAYOUT_ORDER), str(label))


def _fill_key(fill) -> tuple:
    text = "" if _missing(fill) else str(fill)
    pct = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%\s*", text)
    return (-1.0 if not text else 0.0 if text == "none" else 100.0 if text == "whole"
            else float(pct.group(1)) if pct else 101.0, text)


def _times(r: float) -> str:
    return f"{r:.2f}".rstrip("0").rstrip(".") + "x"


def _group_label(layout, fill) -> str:
    return str(layout if not _missing(layout) else "layout not recorded") + \
        ("" if _missing(fill) else f" at fill {fill}")


def slowdown_lines(slowdown: pd.DataFrame) -> list[str]:
    """One sentence per layout × fill level (× load): the paired slowdown, then the pools not judged."""
    lines = []
    keys = lambda kv: (_layout_key(kv[0][0]), _fill_key(kv[0][1]))  # noqa: E731
    for (layout, fill), g in sorted(slowdown.groupby(["layout", "fill"], dropna=False), key=keys):
        label = _group_label(layout, fill)
        judged = g[g["ratio"].notna()]
        for load, j in judged.groupby(judged["load"].fillna(""), sort=True):
            ratios = j["ratio"].to_numpy(float)
            mean = float(np.exp(np.log(ratios).mean()))
            spread = (f"; geometric mean, per pool {_times(ratios.min())}–{_times(ratios.max())}"
                      if len(ratios) > 1 else "")
            lines.append(f"{label}: under {(load + ' load') if load else 'load'} the resilver took {_times(mean)} "
                         f"as long as idle ({len(ratios)} pool{'s' if len(ratios) > 1 else ''}{spread})")
        missing = g[g["ratio"].isna()]
        if len(missing):
            why = "; ".join(f"{', '.join(map(str, m['pool_id']))}: {reason}"
                            for reason, m in missing.groupby(missing["reason"].fillna(""), sort=False))
            lines.append(f"{label}: slowdown under load not judged for {len(missing)} "
                         f"pool{'s' if len(missing) > 1 else ''} ({why})")
    return lines


def _condition(under_load, load) -> str:
    if _missing(under_load):
        return "not recorded"
    return ("under load" + ("" if _missing(load) else f" ({load})")) if under_load else "idle"


def resilver_figure(table: pd.DataFrame):
    """Seconds to resilver by layout: a marker per timed resilver, coloured idle / under load, a symbol per fill."""
    import plotly.graph_objects as go
    timed = table[table["seconds"].notna()]
    if timed.empty:
        raise ConfigError("no timed resilver to plot (every resilver event failed or has no seconds)")
    layouts = sorted(timed["layout"].fillna("layout not recorded").unique(), key=_layout_key)
    fills = sorted(timed["fill"].unique(), key=_fill_key)
    condition = timed["under_load"].map(lambda v: "not recorded" if _missing(v) else "under load" if v else "idle")
    fig = go.Figure()
    for cond in [c for c in CONDITION_COLORS if c in set(condition)]:
        for i, fill in enumerate(fills):
            g = timed[(condition == cond) & (timed["fill"].isna() if _missing(fill) else timed["fill"] == fill)]
            if g.empty:
                continue
            fill_text = "fill not recorded" if _missing(fill) else f"fill {fill}"
            hover = [f"{r.pool_id} {_condition(r.under_load, r.load)}, {fill_text}<br>{r.seconds:.1f} s, "
                     f"{'' if _missing(r.resilvered) else r.resilvered} resilvered"
                     + ("" if _missing(r.rate_mib_s) else f" ({r.rate_mib_s:.1f} MiB/s)")
                     + ("" if _missing(r.load_read_iops) else f"<br>load got {r.load_read_iops:,.0f} read IOPS")
                     + ("" if _missing(r.load_write_iops) else f", {r.load_write_iops:,.0f} write IOPS")
                     for r in g.itertuples()]
            fig.add_trace(go.Scatter(
                x=g["layout"].fillna("layout not recorded"), y=g["seconds"], mode="markers",
                name=cond + ("" if len(fills) == 1 else f", {fill_text}"), legendgroup=cond, offsetgroup=cond,
                marker=dict(color=CONDITION_COLORS[cond], symbol=SYMBOLS[i % len(SYMBOLS)], size=10, opacity=0.85,
                            line=dict(width=1, color="#333333")),
                customdata=g["pool_id"], hovertext=hover, hoverinfo="text"))
    fig.update_layout(title=TITLE, scattermode="group", legend_title_text="resilver",
                      xaxis=dict(title="layout (one lost disk replaced)", type="category",
                                 categoryorder="array", categoryarray=layouts),
                      yaxis=dict(title="time to resilver (s)", rangemode="tozero"))
    return fig


def _display(table: pd.DataFrame) -> pd.DataFrame:
    """The table as the report shows it (readable_html formats the numbers and units)."""
    failed = table["not_judged"].fillna("").astype(str).str.startswith("resilver failed")
    resilvered = [text if not _missing(text) else "" if _missing(n) else f"{n / 2 ** 20:.1f}M"
                  for text, n in zip(table["resilvered"], table["resilvered_bytes"])]
    return pd.DataFrame({
        "pool": table["pool_id"], "layout": table["layout"], "fill": table["fill"],
        "resilver": ["failed" if f else _condition(u, ld)
                     for f, u, ld in zip(failed, table["under_load"], table["load"])],
        "seconds": table["seconds"], "resilvered (as zpool prints it)": resilvered,
        "rate (MiB/s)": table["rate_mib_s"], "load read IOPS": table["load_read_iops"],
        "load write IOPS": table["load_write_iops"], "health after": table["health_after"],
        "not judged": table["not_judged"]})


def resilver_section(table: pd.DataFrame, caption: str = ""):
    """(HTML, figure) of the report's Resilver section: figure, slowdown sentences, table. ('', None) when empty."""
    from zbench_lib.analysis.report.table_format import readable_html
    if table.empty:
        return "", None
    fig, parts = None, []
    if table["seconds"].notna().any():
        fig = add_caption(resilver_figure(table), " ".join(t for t in (caption, METHOD) if t))
        parts.append(fig.to_html(full_html=False, include_plotlyjs=False, div_id="zbench-resilver",
                                 config={"displaylogo": False, "responsive": True}))
    lines = slowdown_lines(load_slowdown(table))
    parts.append('<ul class="conclusions">' + "".join(f"<li>{html.escape(s)}</li>" for s in lines) + "</ul>")
    parts.append(readable_html(_display(table)))
    return "\n".join(parts), fig
