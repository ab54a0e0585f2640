"""Analysis of a finished sweep: statistics, tables, conclusions, plots, reports.

The analysis notebooks import this package as `A`; the names below are their API.
Analysis reads the store (results.parquet, raw/, plan.json) and never talks to a host.
The methods are written down in docs/methods.md.
"""

from zbench_lib.analysis.claims.classic_claims import classic_claims
from zbench_lib.analysis.claims.conclusions import (conclusions_compare, conclusions_scaling,
                                                    conclusions_volblocksize, efficiency_verdict)
from zbench_lib.analysis.data.catalog import catalog
from zbench_lib.analysis.data.columns import CONFIG_COLUMNS, LAYOUT_COLUMNS
from zbench_lib.analysis.data.coverage import cell_status, load_plan
from zbench_lib.analysis.data.flags import (FLAG_MEANINGS, admissible_mask, flagged_runs, select_admissible,
                                            tristate, truth_summary)
from zbench_lib.analysis.data.fleet_hosts import host_agreement, host_coverage
from zbench_lib.analysis.data.metrics import workload_metric
from zbench_lib.analysis.data.replication import resolve_unit
from zbench_lib.analysis.data.sweep_data import (Sweep, environment_table, join_sweeps, load_sweep, parse_level,
                                                 resolve_sweep_dir, varying_columns)
from zbench_lib.analysis.report.compare_factor import auto_baseline, auto_factor, block_choice, comparison_choice
from zbench_lib.analysis.report.notebook_params import check_parameters
from zbench_lib.analysis.report.resilver import load_slowdown, resilver_figure, resilver_table, slowdown_lines
from zbench_lib.analysis.stats.across import SweepSet, load_sweeps
from zbench_lib.analysis.stats.tables import compare_table, scaling_table, space_check
from zbench_lib.analysis.stats.tails import cell_tails, tail_lines, unit_tails
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.sizes import format_size

__all__ = ["CONFIG_COLUMNS", "FLAG_MEANINGS", "LAYOUT_COLUMNS", "ConfigError", "Sweep", "SweepSet", "admissible_mask",
           "auto_baseline", "auto_factor", "block_choice", "catalog", "check_parameters", "cell_tails",
           "classic_claims", "cell_status", "compare_table", "comparison_choice", "conclusions_compare",
           "conclusions_scaling", "conclusions_volblocksize", "efficiency_verdict", "environment_table", "flagged_runs",
           "format_size", "host_agreement", "host_coverage", "join_sweeps", "load_plan", "load_slowdown", "load_sweep",
           "load_sweeps", "parse_level", "resilver_figure",
           "resilver_table", "resolve_sweep_dir", "resolve_unit", "scaling_table", "select_admissible",
           "slowdown_lines", "space_check", "tail_lines", "truth_summary", "tristate", "unit_tails",
           "varying_columns", "workload_metric"]
