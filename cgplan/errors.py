"""The exception tree: every failure a user can cause or meet maps to one exit code."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, one per failure class (documented in README and --help)."""

    OK = 0
    GATE_FAILED = 1
    USAGE = 2
    ENVIRONMENT = 3
    CAPTURE_FAILED = 4


class CgplanError(Exception):
    """Root of every error cgplan reports as a one-line message instead of a traceback."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(CgplanError):
    """A config file or option is malformed: located as `file:dotted.path: problem`."""

    def __init__(self, path: str, problem: str, *, source: str | None = None) -> None:
        self.path = path
        self.problem = problem
        self.source = source
        where = f"{source}:{path}" if source and path else (source or path)
        super().__init__(f"{where}: {problem}" if where else problem)

    def located(self, source: str) -> ConfigError:
        """The same error (same class), with the file it came from in front."""
        err = self.__class__.__new__(self.__class__)
        err.__dict__.update(self.__dict__)
        if self.path.startswith("--"):  # a command-line option: the file is not where it went wrong
            return self
        err.source = source
        err.message = f"{source}:{self.path}: {self.problem}" if self.path else f"{source}: {self.problem}"
        err.args = (err.message,)
        return err


class ConfigRejected(ConfigError):
    """A well-formed config that the chosen vLLM release refuses to start with."""


class ReportError(CgplanError):
    """A report file cannot be read (bad JSON, unknown or newer schema)."""


class GpuUnavailableError(CgplanError):
    """The environment cannot capture: no GPU, no NVML, no vLLM or an unsupported one."""

    exit_code = ExitCode.ENVIRONMENT


class CaptureError(CgplanError):
    """Capture started but failed (out of memory, interrupted, engine error)."""

    exit_code = ExitCode.CAPTURE_FAILED
