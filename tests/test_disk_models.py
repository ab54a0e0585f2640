import pytest

from zbench_lib.hosts.disk_models import PRESETS, DiskModel, parse_model
from zbench_lib.core.errors import ConfigError

MiB = 1024 * 1024


def test_hdd_preset_is_a_7200rpm_envelope():
    m = parse_model("hdd")
    assert (m.iops, m.bw) == (150, 180 * MiB)
    assert m.qemu_throttle_options() == ["throttling.iops-total=150",
                                         f"throttling.bps-total={180 * MiB}"]


def test_unthrottled_has_no_throttle_options():
    assert PRESETS["unthrottled"].qemu_throttle_options() == []
    assert not PRESETS["unthrottled"].throttled


def test_custom_model_with_units():
    m = parse_model("custom:iops_read=500,iops_write=200,bw=1.5G")
    assert (m.iops_read, m.iops_write, m.bw) == (500, 200, int(1.5 * 1024 ** 3))
    assert m.read_iops_limit() == 500 and m.write_iops_limit() == 200
    assert m.qmp_throttle_arguments() == {"iops": 0, "iops_rd": 500, "iops_wr": 200,
                                          "bps": int(1.5 * 1024 ** 3), "bps_rd": 0, "bps_wr": 0}


@pytest.mark.parametrize("spec, message", [
    ("ssd-fast", "unknown disk model 'ssd-fast'"),
    ("custom:iops=-5", "iops must be positive"),
    ("custom:iops=0", "iops must be positive"),
    ("custom:bw=abc", "bw='abc' is not a number"),
    ("custom:speed=5", "unknown field(s) ['speed']"),
    ("custom:", "needs at least one limit"),
    ("custom:iops", "expected key=value"),
    ("custom:iops=100,iops_read=50", "give iops or iops_read/iops_write, not both"),
    ("", "must be a preset name"),
])
def test_bad_models_are_rejected_with_a_specific_message(spec, message):
    with pytest.raises(ConfigError) as exc:
        parse_model(spec)
    assert message in str(exc.value)


def test_negative_iops_in_a_dataclass():
    with pytest.raises(ConfigError, match="iops must be positive, got -1"):
        DiskModel("x", iops=-1)
