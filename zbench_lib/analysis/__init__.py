"""Analysis of a finished sweep: statistics, tables, conclusions, plots, reports.

The analysis notebooks import this package as `A`; the names below are their API.
Analysis reads the store (results.parquet, raw/) and never talks to a host.
"""

from zbench_lib.analysis.conclusions import (conclusions_compare, conclusions_scaling,
                                             conclusions_volblocksize)
from zbench_lib.analysis.sweep_data import (CONFIG_COLUMNS, FLAG_MEANINGS, LAYOUT_COLUMNS, Sweep,
                                            environment_table, flagged_runs, load_sweep, parse_level,
                                            resolve_sweep_dir, select_admissible, truth_summary,
                                            varying_columns)
from zbench_lib.analysis.tables import compare_table, scaling_table, space_check
from zbench_lib.core.errors import ConfigError
from zbench_lib.core.sizes import format_size

__all__ = ["CONFIG_COLUMNS", "FLAG_MEANINGS", "LAYOUT_COLUMNS", "ConfigError", "Sweep",
           "compare_table", "conclusions_compare", "conclusions_scaling", "conclusions_volblocksize",
           "environment_table", "flagged_runs", "format_size", "load_sweep", "parse_level",
           "resolve_sweep_dir", "scaling_table", "select_admissible", "space_check", "truth_summary",
           "varying_columns"]
