"""`zbench doctor` against the lab treated purely as a remote box (plain SSH, no lab shortcuts)."""

import pytest

from zbench_lib.hosts.ssh import SSHHost
from zbench_lib.sweeps.running.doctor import doctor

pytestmark = pytest.mark.lab


@pytest.fixture
def remote_box(lab):
    # Only what a user's ssh config would give: destination, port, key, known host.
    host = SSHHost(**lab.connection(), name="ssh://root@bench-box")
    yield host
    host.close()


def test_doctor_reports_versions_privilege_and_each_device_verdict(lab, remote_box, ext4_disk):
    free = lab.extra_disks[1]
    remote_box.run(["wipefs", "-a", "-q", free])
    findings = doctor(remote_box, devices=[ext4_disk, free, "/dev/vda"])
    by = {}
    for f in findings:
        by.setdefault(f.check, []).append(f)
    assert by["connect"][0].ok
    assert by["privilege"][0].ok and by["privilege"][0].detail == "root"
    assert by["openzfs"][0].ok and by["openzfs"][0].detail.startswith(("2.3.", "2.1.", "2.2."))
    assert by["fio"][0].ok and by["fio"][0].detail.startswith("fio-")
    verdicts = {f.detail.split(":")[0]: f for f in by["device"]}
    assert verdicts[ext4_disk].ok is False and "ext4" in verdicts[ext4_disk].detail
    assert verdicts[free].ok is True
    assert verdicts["/dev/vda"].ok is False          # the root disk
    assert by["leftovers"][0].ok is not None
    # idle is reported, whatever it says: a busy CI machine must not fail this test
    assert by["idle"][0].detail.startswith("1-minute load")
    print("\n".join(f.line() for f in findings))


def test_doctor_names_an_unreachable_host_without_a_traceback():
    host = SSHHost("root@127.0.0.1", port=9, connect_timeout=3, name="ssh://root@127.0.0.1:9")
    try:
        findings = doctor(host)
    finally:
        host.close()
    assert len(findings) == 1 and findings[0].check == "connect" and findings[0].ok is False
