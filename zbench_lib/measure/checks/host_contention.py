"""host_contention: the lab wanted CPU on its controller and did not get it (`host_load.py`)."""

from zbench_lib.measure.host_load import host_contention
from zbench_lib.measure.judging import INVALIDATES, Column, TruthCheck

# host_qemu_cores is the lab's own CPU: its QEMU and the nbdkit processes serving its disks (a record
# made before nbdkit was counted: the QEMU alone); host_other_cores what else ran, described only.
CHECK = TruthCheck("host_contention", host_contention, INVALIDATES,
                   "the lab's emulation waited for the controller's CPU during the run (run-queue wait or steal)",
                   rank=90,
                   columns=(Column("host_other_cores", "other_cores"), Column("host_qemu_cores", "qemu_cores"),
                            Column("host_other_qemus", "other_qemus"),
                            Column("host_lab_wait_share", "lab_wait_share"),
                            Column("host_lab_run_cores", "lab_run_cores"),
                            Column("host_steal_share", "steal_share")), columns_rank=50)
