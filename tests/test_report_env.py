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
