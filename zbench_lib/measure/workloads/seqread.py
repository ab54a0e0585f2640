"""One stream of 1M reads: the bandwidth a layout gives back (four outstanding keep every disk busy)."""

from zbench_lib.measure.workloads import Workload

WORKLOAD = Workload("seqread", direction="read", sequential=True, metric="bw_bytes_s",
                    defaults=dict(bs="1M", iodepth=4, numjobs=1))
