"""device_lost: the pool was not ONLINE after the run, or a raw disk was gone (`device_health.py`)."""

from zbench_lib.measure.device_health import device_lost
from zbench_lib.measure.judging import DESCRIBES, INVALIDATES, TruthCheck

# Outside a fault study a lost disk is an accident of the bench; inside one it is the question.
CHECK = TruthCheck("device_lost", device_lost, INVALIDATES,
                   "a disk of the pool was missing or faulted after the run: a degraded pool was measured",
                   rank=100, in_fault_study=DESCRIBES)
