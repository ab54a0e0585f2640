import subprocess

import pytest

from zbench_lib.core.errors import CommandError, CommandTimeout, ConfigError
from zbench_lib.hosts.base import LocalHost
from zbench_lib.hosts.resolve import parse_host
from zbench_lib.hosts.ssh import SSHHost


def test_local_run_returns_output_status_and_duration():
    res = LocalHost().run(["sh", "-c", "echo out; echo err >&2"])
    assert res.stdout == "out\n" and res.stderr == "err\n" and res.returncode == 0
    assert res.duration_s >= 0


def test_failure_carries_command_and_stderr_tail():
    with pytest.raises(CommandError) as exc:
        LocalHost().run(["sh", "-c", "for i in $(seq 40); do echo line$i >&2; done; exit 3"])
    msg = str(exc.value)
    assert "exit 3" in msg and "sh -c" in msg and "line40" in msg and "line1\n" not in msg


def test_timeout_raises():
    with pytest.raises(CommandTimeout):
        LocalHost().run(["sleep", "5"], timeout=0.5)


def test_missing_program_is_a_command_error():
    with pytest.raises(CommandError, match="exit 127"):
        LocalHost().run(["/nonexistent/zbench-tool"])


def test_ssh_arguments_are_quoted_one_by_one():
    host = SSHHost("root@example", port=2200)
    wrapped = host._wrap(["echo", "a b", "$(reboot)", "x;y"])
    assert wrapped[-1] == "echo 'a b' '$(reboot)' 'x;y'"
    assert wrapped[-2] == "root@example" and "2200" in wrapped


def test_a_project_ssh_config_is_handed_to_ssh(tmp_path, monkeypatch):
    config = tmp_path / "ssh_config"
    config.write_text("Host bench-box\n  HostName 127.0.0.1\n")
    monkeypatch.setenv("ZBENCH_SSH_CONFIG", str(config))
    wrapped = SSHHost("root@bench-box")._wrap(["true"])
    assert wrapped[:3] == ["ssh", "-F", str(config)]
    # ssh itself resolves the alias from that file (-G prints the configuration it would use)
    resolved = subprocess.run(["ssh", "-F", str(config), "-G", "bench-box"], capture_output=True, text=True).stdout
    assert "hostname 127.0.0.1" in resolved.splitlines()
    monkeypatch.setenv("ZBENCH_SSH_CONFIG", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="ZBENCH_SSH_CONFIG=.*is not a file"):
        SSHHost("root@bench-box")


def test_a_sudo_host_runs_every_command_through_sudo_n_quoted_the_same():
    host = SSHHost("bench@example")
    host.sudo = True
    assert host._wrap(["zpool", "list", "a b"])[-1] == "sudo -n -- zpool list 'a b'"
    assert host._wrap(["-x"])[-1] == "sudo -n -- -x"          # '--': never an option of sudo's


@pytest.mark.parametrize("spec, message", [
    ("ftp://x", "unknown host"),
    ("ssh://", "needs a host"),
    ("ssh://h:99999", "invalid ssh port"),
    ("ssh://-oProxyCommand=x", "invalid ssh destination"),
])
def test_bad_host_specs(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_host(spec)


def test_put_get_roundtrip_local(tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("hello")
    h = LocalHost()
    h.put(src, str(tmp_path / "sub" / "b.txt"))
    h.get(str(tmp_path / "sub" / "b.txt"), tmp_path / "c.txt")
    assert (tmp_path / "c.txt").read_text() == "hello"
