"""Commands that stop a load on its host: argument lists, for Host.stop_on_host and teardowns.

Kept in core (pure argv builders) so every layer can name how its load is stopped without
importing a host.
"""

from __future__ import annotations


def stop_by_cwd(directory: str) -> list[str]:
    """A command that stops every fio whose working directory is under `directory`.

    The directory is an argument of the script, never interpolated into it.
    """
    script = ('for p in $(pgrep -x fio); do case "$(readlink /proc/$p/cwd)" in "$1"*) '
              'kill -TERM "$p";; esac; done; exit 0')
    return ["sh", "-c", script, "stop-by-cwd", directory]


def stop_by_args(pattern: str) -> list[str]:
    """A command that stops the processes whose command line contains `pattern` (pkill -f)."""
    return ["pkill", "-TERM", "-f", "--", pattern]
