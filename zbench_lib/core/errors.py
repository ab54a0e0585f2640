"""Exceptions raised by zbench. Library code raises; only the CLI exits."""


class ZbenchError(Exception):
    """Base class for every error zbench raises on purpose."""


class ConfigError(ZbenchError):
    """Bad input, detected before anything is created or written."""


class CommandError(ZbenchError):
    """A command on a host failed; carries the command and the tail of stderr."""

    def __init__(self, host, argv, returncode, stderr, stdout=""):
        self.host = host
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        self.stdout = stdout
        tail = "\n".join(stderr.strip().splitlines()[-15:])
        super().__init__(
            f"command failed on {host} (exit {returncode}): {' '.join(self.argv)}"
            + (f"\n--- stderr (tail) ---\n{tail}" if tail else "")
        )


class CommandTimeout(CommandError):
    """A command on a host did not finish within its timeout."""
