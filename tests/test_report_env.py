"""The environment as a person reads it: a dozen lines from the real provenance records."""

from pathlib import Path

from zbench_lib import analysis as A
from zbench_lib.analysis.report.env_summary import environment_html, environment_summary
from zbench_lib.analysis.data.synthetic import write_synthetic_sweep

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"


def test_environment_summary_of_a_lab_sweep():
    sw = A.load_sweep(EXAMPLES / "volblocksize")
    lines = dict(environment_summary(sw.provenance, sw.results, "zvol"))
    assert 10 <= len(lines) <= 14
    assert list(lines)[:3] == ["OpenZFS", "Kernel", "fio"]
    assert lines["OpenZFS"].startswith("2.3.2 ")
    assert lines["Kernel"] == "6.1.0-50-amd64 (x86_64)" and lines["fio"] == "3.33"
    assert lines["CPU"] == "2 × QEMU Virtual CPU version 2.5+" and lines["RAM"] == "1.9 GiB"
    assert lines["Disks"].startswith("6 × 1 GiB")
    assert lines["Disk model"] == "custom:iops=100,bw=12M: 100 IOPS, 12 MiB/s per disk"
    assert lines["Pool layouts"].startswith("mirror 3x2; raidz1 1x6; raidz2 1x6")
    assert lines["ashift"] == "12 (4 KiB sectors)"
    assert "volblocksize 4K, 16K, 128K (varied)" in lines["Target"] and "primarycache metadata" in lines["Target"]
    assert "TCG" in lines["Host"]
    assert not any("e+" in v or "None" in v for v in lines.values())   # no raw floats, no nulls


def test_environment_html_keeps_the_full_record_behind_a_disclosure():
    sw = A.load_sweep(EXAMPLES / "scaling")
    html = environment_html(sw)
    assert html.count("<tr>") > 60 and "<details>" in html
    summary, details = html.split("<details>")
    assert summary.count("<tr>") == len(environment_summary(sw.provenance, sw.results, "zvol"))
    assert "lab_boot_s" in details and "lab_boot_s" not in summary


def test_synthetic_environment_says_so(tmp_path):
    sw = A.load_sweep(write_synthetic_sweep(tmp_path / "s", n_rows=60))
    lines = environment_summary(sw.provenance, sw.results)
    assert lines[0][0] == "Data" and "SYNTHETIC" in lines[0][1]


def test_sessions_on_two_openzfs_releases_are_both_named(tmp_path):
    import json
    import shutil
    src = Path(__file__).resolve().parent.parent / "data" / "examples" / "volblocksize"
    for name in ("spec.yaml", "results.parquet"):
        shutil.copy2(src / name, tmp_path / name)
    for stamp, user, kmod in (("20261124T000001Z", "zfs-2.1.11-1+deb12u1", "zfs-kmod-2.1.11-1+deb12u1"),
                              ("20261124T000101Z", "zfs-2.3.2-2~bpo12+2", "zfs-kmod-2.3.2-2~bpo12+2")):
        (tmp_path / f"host-provenance-{stamp}.json").write_text(json.dumps({"zfs_userland": user, "zfs_kmod": kmod}))
    sweep = A.load_sweep(tmp_path)
    line = dict(environment_summary(sweep.provenance, sweep.results))["OpenZFS"]
    assert line == ("2.1.11 (zfs-2.1.11-1+deb12u1, zfs-kmod-2.1.11-1+deb12u1); "
                    "2.3.2 (zfs-2.3.2-2~bpo12+2, zfs-kmod-2.3.2-2~bpo12+2) (one lab per release)")
    (tmp_path / "host-provenance-20261124T000001Z.json").unlink()     # one release: as before
    sweep = A.load_sweep(tmp_path)
    assert dict(environment_summary(sweep.provenance, sweep.results))["OpenZFS"] == \
        "2.3.2 (zfs-2.3.2-2~bpo12+2, zfs-kmod-2.3.2-2~bpo12+2)"


def _disk_model(model) -> str:
    """The "Disk model" line of a lab's provenance as the lab writes it (Lab.provenance: LabConfig.to_dict)."""
    from zbench_lib.hosts.disk_models import parse_model
    record = parse_model(model).to_dict() if isinstance(model, str) else model
    return dict(environment_summary({"lab_config": {"disks": 2, "disk_bytes": 2 ** 30, "model": record}}))["Disk model"]


def test_a_mechanism_models_parameters_and_source_are_in_the_environment():
    line = _disk_model("mech:hdd-7200,write_cache=off,queue_depth=1")
    assert line.startswith("mech:hdd-7200,write_cache=off,queue_depth=1 (mechanism model, served through nbdkit): "
                           "7200 rpm; seek 1 ms single-track, 8.5 ms average, 15 ms full stroke; media rate 150 MB/s "
                           "outer to 75 MB/s inner; command overhead 0.2 ms; no command queueing (depth 1); "
                           "write cache off; source: Hitachi Deskstar 7K1000.C")
    assert "NCQ depth 32; write cache on (16 MiB)" in _disk_model("mech:hdd-7200")
    ssd = _disk_model("mech:sata-ssd")
    assert "8 parallel units" in ssd and "300 MB/s past a 1.2% spare area" in ssd and "Samsung 850 EVO" in ssd
    assert _disk_model("mech:null").startswith("mech:null (mechanism model, served through nbdkit): no delay")


def test_the_environment_shows_the_recorded_parameters_never_the_presets_of_the_name():
    from zbench_lib.hosts.disk_models import parse_model
    record = parse_model("mech:hdd-7200").to_dict()
    record["mech_model"]["params"]["rpm"] = 5400          # as if the preset changed after the sweep ran
    assert "5400 rpm" in _disk_model(record)
    assert _disk_model("hdd") == "hdd: 150 IOPS, 180 MiB/s per disk"       # a throttle: its limits, as before
    older = {k: v for k, v in parse_model("mech:hdd-7200").to_dict().items() if k != "mech_model"}
    assert "its parameters are not recorded with this sweep" in _disk_model(older)
    assert "not recorded" in dict(environment_summary({"lab_disk_model": "mech:hdd-5400"}))["Disk model"]


def test_the_mechanism_prefix_is_the_hosts_one():
    from zbench_lib.analysis.report.env_summary import MECH_PREFIX
    from zbench_lib.hosts.mech_models import PREFIX
    assert MECH_PREFIX == PREFIX
