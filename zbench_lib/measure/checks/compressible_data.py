"""compressible_data: the target's compressratio is impossible for the data the spec declared.

The judging is `compressibility.py`'s (the other checks share its `logical_per_physical`)."""

from zbench_lib.measure.compressibility import compressible_data
from zbench_lib.measure.judging import INVALIDATES, TruthCheck

# The meaning's words are those of before declarations, kept as the example notebooks' stored
# outputs show them.
CHECK = TruthCheck("compressible_data", compressible_data, INVALIDATES,
                   "data was compressible although the question is not about compression", rank=60)
