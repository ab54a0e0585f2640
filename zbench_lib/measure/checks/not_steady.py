"""not_steady: the run's per-second IOPS drifted across its window (measure/steady.py, methods §12)."""

from __future__ import annotations

import math

from zbench_lib.measure.judging import DESCRIBES, MIN_FIO_BYTES, Column, TruthCheck, fio_bytes, not_judged, num
from zbench_lib.measure.steady import TXG_PERIOD_S, steady_state


def not_steady(fio_rows, c, ctx) -> dict:
    series = ctx.iops_series
    if series is not None:
        writes = fio_bytes(fio_rows, "write") >= MIN_FIO_BYTES
        txg = num(ctx.txg_timeout_s)
        return steady_state(series, txg_period_s=(TXG_PERIOD_S if math.isnan(txg) or txg <= 0 else txg)
                            if writes and not ctx.no_pool else None)       # raw disks: no TXG to pulse with
    attained = [r.get("ss_attained") for r in fio_rows if r.get("ss_attained") is not None]
    if attained:
        return dict(samples=0, range_pct=math.nan, slope_pct=math.nan, flag=not all(attained),
                    reason="no per-second series; fio's steadystate attained=" + str(all(attained)))
    return not_judged("no per-second series", samples=0, range_pct=math.nan, slope_pct=math.nan)


CHECK = TruthCheck("not_steady", not_steady, DESCRIBES, "never reached steady state", rank=40, columns=(
    Column("steady_range_pct", "range_pct"), Column("steady_slope_pct", "slope_pct"),
    Column("steady_samples", "samples", default=0), Column("steady_noise_pct", "noise_pct"),
    Column("steady_range_limit_pct", "range_limit_pct"), Column("steady_slope_limit_pct", "slope_limit_pct"),
    Column("steady_round_s", "round_s"), Column("steady_pulse_s", "pulse_period_s")), columns_rank=40)
