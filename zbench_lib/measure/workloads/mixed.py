"""8k random I/O, 70% reads: the only workload that takes rwmixread (its read share)."""

from zbench_lib.measure.workloads import Workload

WORKLOAD = Workload("mixed", direction="mixed", sequential=False, metric="iops", rwmix=True,
                    defaults=dict(bs="8k", iodepth=4, numjobs=4, rwmixread=70))
