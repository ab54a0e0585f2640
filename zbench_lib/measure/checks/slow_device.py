"""slow_device: one data disk served requests far slower than its peers (`device_health.py`)."""

from zbench_lib.measure.device_health import slow_device
from zbench_lib.measure.judging import DESCRIBES, TruthCheck

CHECK = TruthCheck("slow_device", slow_device, DESCRIBES,
                   "one data disk served requests far slower than its peers (a failing or throttled drive)", rank=110,
                   regime=True)
