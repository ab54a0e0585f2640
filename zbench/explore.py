"""The widget explorer behind notebooks/explore.ipynb: pick a configuration, read the dry run's
estimate and the models' prediction, press one button to measure it on the lab, and see the result
beside the nearest configurations of the shipped examples.

Every value a widget offers goes through `zbench.Config`, so a bad combination gets the spec
validator's one line before anything starts, and the button stays off until it is fixed. The lab is
booted on the first run (or a running one reused: ZBENCH_LAB, `zbench lab up --name explore`) and
kept for the next; a lab this kernel booted is shut down when the kernel ends. A test drives the
widgets by setting their values and calling `run()` (the button's callback).
"""

from __future__ import annotations

import html
import json
import math
import os
import threading
from dataclasses import replace
from pathlib import Path

import ipywidgets as W
import pandas as pd

import zbench
from zbench.result import Result
from zbench_lib.analysis.claims.wording import interval_text
from zbench_lib.analysis.data.catalog import load_rows, sweep_dirs
from zbench_lib.analysis.stats.stats import summary
from zbench_lib.analysis.data.metrics import workload_metric
from zbench_lib.core.events import Event
from zbench_lib.core.paths import REPO_ROOT
from zbench_lib.hosts.disk_models import PRESETS, parse_model
from zbench_lib.measure import workloads
from zbench_lib.zfs import families
from zbench_lib.zfs.models import has_model, predicted_random_read_iops, space_efficiency

BLOCKS = ("4k", "8k", "16k", "32k", "64k", "128k")
IO_SIZES = ("4k", "8k", "16k", "64k", "128k", "1M")
NEAREST = ("sweep_id", "template", "layout", "width", "vdevs", "volblocksize_bytes", "bs_bytes", "iodepth",
           "disk_model")
LAB_DISKS = 8           # the explorer's lab: the widest layout the disks slider offers


def _size(text) -> int:
    from zbench_lib.core.sizes import parse_size
    return parse_size(str(text))


def nearest(rows: pd.DataFrame, cfg: zbench.Config, k: int = 5) -> pd.DataFrame:
    """The `k` configurations of `rows` (the examples' admissible rows) closest to `cfg`: the same disk
    model first (a figure from other disks says nothing about these), then the same workload kind, then
    layout, disks, block size and I/O size (a distance in doublings and mismatches), each with its judged
    metric's mean and 95% CI over its units (pools where the sweep replicated them), or "n=1, no interval"."""
    if rows.empty:
        return pd.DataFrame()
    by = [c for c in NEAREST if c in rows]
    metric = workload_metric(cfg.workload)
    cells = summary(rows.dropna(subset=[metric]), metric, by)       # n counts pools where they were replicated
    cells["distance"] = [_distance(r, cfg) for r in cells.itertuples()]
    unit, scale = ("MiB/s", 1024 ** 2) if metric == "bw_bytes_s" else ("IOPS", 1)
    out = cells.sort_values("distance", kind="stable").head(k)
    return pd.DataFrame({
        "sweep": out["sweep_id"], "workload": out["template"], "layout": out["layout"] + "(" +
        out["width"].astype(int).astype(str) + ")" + out["vdevs"].map(lambda v: f" x{int(v)}" if v > 1 else ""),
        "volblocksize": out["volblocksize_bytes"].map(lambda b: f"{int(b) // 1024}K"),
        "bs": out["bs_bytes"].map(lambda b: f"{int(b) // 1024}K"), "iodepth": out["iodepth"].astype(int),
        "disk model": out["disk_model"], unit: (out["mean"] / scale).round(1),
        "95% CI": [_ci(lo / scale, hi / scale, n) for lo, hi, n in zip(out["ci95_low"], out["ci95_high"], out["n"])],
        "n": out["n"].astype(int), "distance": out["distance"].round(1)}).reset_index(drop=True)


def _ci(lo: float, hi: float, n) -> str:
    """The interval as every page writes it (`wording.interval_text`), or why there is none."""
    if n >= 2 and lo == lo and hi == hi:
        return interval_text(lo, hi, int(n), lambda v: f"{v:.1f}")
    return f"n={int(n)}, no interval"


def _log2(a, b) -> float:
    """Doublings between two sizes or counts (3 when either is unknown)."""
    return abs(math.log2(float(a) / float(b))) if a and b and a == a and b == b else 3.0


def _distance(r, cfg: zbench.Config) -> float:
    fam, other = families.find(cfg.layout), families.find(str(r.layout))
    d = 0 if r.disk_model == cfg.model else 100
    d += 0 if r.template == cfg.workload else 10
    d += 0 if r.layout == cfg.layout else 2 if fam and other and fam.parity == other.parity else 4
    d += _log2(r.width * r.vdevs, cfg.disks) + _log2(r.volblocksize_bytes, _size(cfg.volblocksize))
    return d + (_log2(r.bs_bytes, _size(cfg.bs)) if cfg.bs else 0)


def predicted(cfg: zbench.Config) -> str:
    """The models' prediction for `cfg`, in words (zfs/models.py: space, and random-read IOPS)."""
    fam, lines = families.find(cfg.layout), []
    if fam is None:
        return ""
    width, vdevs = fam.shape(cfg.disks, {}, {"family": cfg.layout})
    block = _size(cfg.volblocksize)
    if has_model(cfg.layout, "space"):
        eff = space_efficiency(cfg.layout, width, block)
        lines.append(f"space: {eff:.3f} logical bytes per raw byte allocated ({1 / eff:.2f}x raw per byte written, "
                     f"parity and padding included)")
    wl, model = workloads.find(cfg.workload), parse_model(cfg.model)
    disk = model.read_iops_limit()
    if wl is not None and wl.direction == "read" and not wl.sequential and disk and has_model(cfg.layout):
        iops = predicted_random_read_iops(cfg.layout, width, vdevs, float(disk), block)
        lines.append(f"random reads: {iops:,.0f} IOPS from {disk:,} IOPS per disk ({vdevs} x {width} disks)")
    else:
        lines.append("IOPS: no model for this workload (zfs/models.py predicts random reads only)")
    return "; ".join(lines)


class Explorer:
    """The widgets, their callbacks and the last result (`result`)."""

    def __init__(self, examples=REPO_ROOT / "data" / "examples", out=None, measure=None, lab=None):
        self.out, self._measure, self._lab = out, measure or zbench.measure, lab
        self.result: Result | None = None
        self.error: str | None = None
        try:
            self.examples = load_rows(sweep_dirs(examples))
        except Exception as e:           # noqa: BLE001 (no examples: the explorer still measures)
            self.examples, self.error = pd.DataFrame(), f"examples not loaded: {e}"
        d = zbench.Config()
        self.layout = W.Dropdown(options=[f for f in families.names() if not f.startswith("draid")],
                                 value=d.layout, description="layout")
        self.disks = W.IntSlider(value=d.disks, min=1, max=LAB_DISKS, description="disks")
        self.volblocksize = W.Dropdown(options=BLOCKS, value=d.volblocksize, description="volblocksize")
        self.workload = W.Dropdown(options=workloads.names(), value=d.workload, description="workload")
        self.bs = W.Dropdown(options=IO_SIZES, value=d.bs, description="I/O size")
        self.model = W.Combobox(options=list(PRESETS), value=d.model, description="disk model",
                                placeholder="hdd, or custom:iops=500,bw=200M", ensure_option=False)
        self.repetitions = W.IntSlider(value=d.repetitions, min=1, max=10, description="repetitions")
        self.runtime_s = W.IntSlider(value=d.window_s or zbench.READ_WINDOW_S, min=3, max=300, description="window (s)")
        self.button = W.Button(description="Run on the lab", button_style="primary", icon="play")
        self.estimate = W.HTML()
        self.prediction = W.HTML()
        self.status = W.HTML()
        self.bar = W.IntProgress(value=0, min=0, max=1, description="runs", layout=W.Layout(visibility="hidden"))
        self.shown = W.HTML()
        self.near = W.HTML()
        self.figure = W.Output()
        self.controls = (self.layout, self.disks, self.volblocksize, self.workload, self.bs, self.model,
                         self.repetitions, self.runtime_s)
        for w in self.controls:         # a fixed column: the dry run's long lines must not squeeze the sliders
            w.style, w.layout = {"description_width": "90px"}, W.Layout(width="340px")
            w.observe(self.refresh, names="value")
        self.button.on_click(self.run)
        self.refresh()

    def set(self, **values) -> "Explorer":
        """Set widgets by name (a notebook parameter, or a test driving them). The values are checked by
        the spec validator first (InvalidInput: its one line), then by the widgets' own ranges."""
        for k in values:
            if getattr(self, k, None) not in self.controls:
                raise zbench.InvalidInput(f"explorer: no widget {k!r}; widgets are "
                                          f"{', '.join(c.description for c in self.controls)}")
        zbench.estimate(replace(self.config(), **values))
        for k, v in values.items():
            w = getattr(self, k)
            if isinstance(w, W.IntSlider) and not w.min <= v <= w.max:
                raise zbench.InvalidInput(f"{k}: the explorer offers {w.min} to {w.max}, got {v!r}")
            if isinstance(w, W.Dropdown) and v not in w.options:
                w.options = (*w.options, v)         # valid (the validator said so), only not offered
            w.value = v
        return self

    def config(self) -> zbench.Config:
        return zbench.Config(layout=self.layout.value, disks=self.disks.value, volblocksize=self.volblocksize.value,
                             workload=self.workload.value, bs=self.bs.value, model=self.model.value.strip(),
                             repetitions=self.repetitions.value, runtime_s=self.runtime_s.value,
                             ramp_s=min(zbench.DEFAULTS["ramp_s"], self.runtime_s.value))

    def refresh(self, *_) -> None:
        """Validate the widgets' configuration: the dry run's estimate, or the validator's one line."""
        cfg = self.config()
        try:
            text = zbench.estimate(cfg)
        except zbench.InvalidInput as e:
            self.error = str(e)
            self.estimate.value = f"<p style='color:#b00'>&#9888; {html.escape(self.error)}</p>"
            self.prediction.value, self.near.value, self.button.disabled = "", "", True
            return
        self.error, self.button.disabled = None, False
        self.estimate.value = ("<b>Dry run</b> (nothing starts before the button)<pre style='white-space: pre-wrap; "
                               "font-size: 90%; margin-top: 2px'>" + html.escape(text) + "</pre>")
        self.prediction.value = f"<b>The models say</b>: {html.escape(predicted(cfg))}"
        self._show_nearest(cfg)

    def _show_nearest(self, cfg: zbench.Config, result: Result | None = None) -> None:
        table = nearest(self.examples, cfg)
        if table.empty:
            self.near.value = ""
            return
        if result is not None:
            mean, lo, hi, n = result.estimate()
            unit = next(c for c in ("IOPS", "MiB/s") if c in table)
            mine = {"sweep": "this run", "workload": cfg.workload, "layout": f"{cfg.layout}({cfg.disks})",
                    "volblocksize": str(cfg.volblocksize).upper(), "bs": str(cfg.bs).upper(),
                    "iodepth": int(result.first.get("iodepth", 0)),
                    "disk model": result.first.get("disk_model", cfg.model),
                    unit: round(mean, 1), "95% CI": _ci(lo, hi, n), "n": n, "distance": 0.0}
            table = pd.concat([pd.DataFrame([mine]), table], ignore_index=True)
        self.near.value = ("<b>Nearest configurations of the shipped examples</b> (data/examples)"
                           + table.to_html(index=False))

    def _watch(self, stop: threading.Event) -> None:
        """Runs finished so far, from the newest what-if store's events.jsonl (the sweep's own record)."""
        root = Path(self.out or zbench.DEFAULTS["out"])
        root = root if root.is_absolute() else REPO_ROOT / root
        while not stop.wait(1.0):
            stores = sorted(root.glob("whatif-*/events.jsonl"), key=lambda p: p.stat().st_mtime)
            if not stores:
                continue
            done = 0
            for line in stores[-1].read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    done += json.loads(line).get("event") == Event.RUN_COMPLETED
                except ValueError:
                    continue
            self.bar.value = min(done, self.bar.max)

    def _log(self, text) -> None:
        self.status.value = f"<code>{html.escape(str(text).splitlines()[0][:200])}</code>"

    def run(self, *_) -> Result | None:
        """The button: measure the configuration on the lab (booted once, then reused)."""
        self.refresh()
        if self.error:
            return None
        cfg = self.config()
        self.button.disabled = True
        self.bar.max, self.bar.value, self.bar.layout.visibility = cfg.repetitions * cfg.pools, 0, "visible"
        stop = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(stop,), daemon=True)
        try:
            if self._lab is None:
                self._log("booting the lab (once per kernel), or reusing a running one ...")
                # a lab of its own gets every disk the slider offers; a named running one needs only this run's
                self._lab = zbench.lab(disks=cfg.disks if os.environ.get("ZBENCH_LAB") else LAB_DISKS,
                                       model=cfg.model)
            watcher.start()
            self.result = self._measure(cfg, lab=self._lab, out=self.out, progress=False, log=self._log)
        except Exception as e:          # noqa: BLE001 (shown in one line; the traceback stays with the kernel)
            self.error = f"{type(e).__name__}: {e}"
            self.status.value = f"<p style='color:#b00'>&#9888; {html.escape(self.error)}</p>"
            raise
        finally:
            stop.set()
            self.button.disabled = bool(self.error)
        self.bar.value = self.bar.max
        self.show(self.result)
        return self.result

    def show(self, result: Result) -> None:
        """A result beside the nearest examples and the models, its truth checks folded."""
        self.status.value = "<b>Done.</b> " + html.escape(str(result.path))
        self.shown.value = result._repr_html_() + result.model()._repr_html_()
        self._show_nearest(self.config(), result)
        self.figure.clear_output()
        with self.figure:
            result.plot().show()

    def widget(self) -> W.Widget:
        left = W.VBox(list(self.controls) + [self.button, self.bar, self.status],
                      layout=W.Layout(min_width="350px", width="350px"))
        right = W.VBox([self.estimate, self.prediction], layout=W.Layout(flex="1 1 auto"))
        return W.VBox([W.HBox([left, right]), self.shown, self.near, self.figure])

    def _ipython_display_(self) -> None:
        from IPython.display import display
        display(self.widget())
