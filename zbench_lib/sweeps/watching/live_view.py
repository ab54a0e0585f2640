"""A live chart of a running sweep in JupyterLab, fed by the store's events.jsonl.

The sweep notebook shows it above its progress bars: each finished run adds a point
(IOPS, by cell, with the cell's mean so far; a red x once a truth check invalidates it), and
a second panel draws the per-second IOPS of the run that just finished, from its fio log in
the raw record. It reads only the local store, never the host under test: watching the
current run on the host would put an observer beside the measurement (the per-second panel
therefore shows a run as soon as it ends, not while it runs).

`LiveSweepView(sweep_dir, plan)` is a context manager; `figure()` builds the chart
from what has been seen so far (tests call it directly).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from zbench_lib.core.events import Event
from zbench_lib.sweeps.watching.progress import EventTail, SweepProgress, fio_iops


# The events that change what the chart shows.
_REDRAW = (Event.RUN_COMPLETED, Event.RUN_JUDGED, Event.FINISHED, Event.STARTED, Event.RESUMED)


def per_second_iops(sweep_dir, run_id: str, attempt) -> tuple[list[float], list[float]]:
    """(seconds since the run's first sample, IOPS summed over jobs and directions)."""
    from zbench_lib.measure.fio_parse import parse_fio_logs_dir
    try:
        logs = parse_fio_logs_dir(Path(sweep_dir) / "raw" / run_id / f"attempt-{attempt}" / "fio")
    except Exception:                      # a torn log must never stop the view
        return [], []
    iops = logs[logs["metric"] == "iops"]
    if iops.empty:
        return [], []
    per_s = iops.assign(s=(iops["t_ms"] // 1000)).groupby("s")["value"].sum().sort_index()
    return [float(s - per_s.index[0]) for s in per_s.index], [float(v) for v in per_s.values]


class LiveSweepView:
    """`with LiveSweepView(sweep_dir, plan): run_sweep(...)` keeps one displayed chart current."""

    def __init__(self, sweep_dir, plan=None, interval: float = 1.0, display=True):
        self.sweep_dir = Path(sweep_dir)
        reader = lambda rid, att: fio_iops(self.sweep_dir, rid, att)  # noqa: E731
        self.state = SweepProgress.from_plan(plan, reader) if plan is not None else SweepProgress(iops_of=reader)
        self.runs: list[dict] = []          # one per finished run: run_id, cell, iops
        self.last: dict | None = None       # the last finished run's per-second series
        self._lock, self._dirty, self._handle = threading.Lock(), False, None
        self._show = display
        self.tail = EventTail(self.sweep_dir / "events.jsonl", self._on_event, interval, self._refresh)

    def _on_event(self, ev: dict) -> None:
        with self._lock:
            self.state.apply(ev)
            if ev.get("event") == Event.RUN_COMPLETED:
                rid, att = ev.get("run_id", ""), ev.get("attempt", 1)
                cell = self.state.cells.get(rid) or self.state.cells.get(rid.rsplit("-r", 1)[0]) or rid
                self.runs.append({"run_id": rid, "cell": cell, "iops": fio_iops(self.sweep_dir, rid, att)})
                t, v = per_second_iops(self.sweep_dir, rid, att)
                self.last = {"run_id": rid, "cell": cell, "t": t, "iops": v}
            elif ev.get("event") == Event.RUN_JUDGED:
                for r in self.runs:
                    if r["run_id"] == ev.get("run_id"):
                        # events before flag kinds (issue 27) named every flag raised as truth_flags
                        r["flags"] = list(ev.get("invalidating_flags", ev.get("truth_flags")) or [])
            self._dirty = self._dirty or ev.get("event") in _REDRAW

    def figure(self):
        from plotly.subplots import make_subplots
        with self._lock:
            runs, last, title = list(self.runs), self.last, self._title()
        fig = make_subplots(rows=2, cols=1, vertical_spacing=0.22, subplot_titles=(
            "IOPS of each finished run (dot; red x: invalidated by a truth check) and the cell's mean so far (bar)",
            f"per-second IOPS of {last['run_id']} ({last['cell']}), from its fio log" if last
            else "per-second IOPS of the last finished run (none yet)"))
        cells = list(dict.fromkeys(r["cell"] for r in runs))
        judged = [r for r in runs if r["iops"] is not None]
        means = [sum(r["iops"] for r in judged if r["cell"] == c) / max(1, sum(r["cell"] == c for r in judged))
                 for c in cells]
        fig.add_bar(x=cells, y=means, name="mean so far", marker_color="lightsteelblue", row=1, col=1)
        flagged = [bool(r.get("flags")) for r in judged]
        fig.add_scatter(x=[r["cell"] for r in judged], y=[r["iops"] for r in judged], mode="markers",
                        name="one run", text=[r["run_id"] for r in judged],
                        marker={"color": ["firebrick" if f else "black" for f in flagged], "size": 8,
                                "symbol": ["x" if f else "circle" for f in flagged]},
                        customdata=[", ".join(r.get("flags") or []) or "admissible" for r in judged],
                        hovertemplate="%{text}: %{y:,.0f} IOPS (%{customdata})<extra></extra>", row=1, col=1)
        if last:
            fig.add_scatter(x=last["t"], y=last["iops"], mode="lines+markers", name=last["run_id"],
                            line={"color": "darkorange"}, row=2, col=1)
        fig.update_yaxes(title_text="IOPS", rangemode="tozero", row=1, col=1)
        fig.update_yaxes(title_text="IOPS (per second)", rangemode="tozero", row=2, col=1)
        fig.update_xaxes(title_text="seconds since the run's first fio sample", row=2, col=1)
        fig.update_layout(title=title, height=620, showlegend=False, margin={"t": 90})
        return fig

    def _bundle(self) -> dict:
        # A plain MIME bundle: a plotly figure displays itself through _ipython_display_,
        # which drops display_id, so updates would pile up as new outputs.
        import json
        import plotly.io as pio
        fig = self.figure()
        return {"application/vnd.plotly.v1+json": {**json.loads(pio.to_json(fig, validate=False)),
                                                   "config": {"displaylogo": False}},
                "text/plain": fig.layout.title.text}

    def _title(self) -> str:
        s = self.state
        return f"sweep {self.sweep_dir.name}: {s.done}/{s.planned or '?'} runs · {s.postfix(time.time())}"

    def _refresh(self) -> None:
        if not self._dirty or not self._show:
            return
        self._dirty = False
        if self._handle is not None:
            self._handle.update(self._bundle(), raw=True)

    def __enter__(self) -> "LiveSweepView":
        if self._show:
            from IPython.display import display
            self._handle = display(self._bundle(), raw=True, display_id=True)
        self.tail.start()
        return self

    def __exit__(self, *exc) -> None:
        self.tail.stop()
        self._dirty = True
        self._refresh()
