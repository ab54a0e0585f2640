"""One stream of 1M writes: the bandwidth a layout takes in (four outstanding keep every disk busy)."""

from zbench_lib.measure.workloads import Workload

WORKLOAD = Workload("seqwrite", direction="write", sequential=True, metric="bw_bytes_s",
                    defaults=dict(bs="1M", iodepth=4, numjobs=1))
