"""The core's own errors: what a planner can say is wrong with its input (cgplan/errors.py gives
each an exit code; the core knows none)."""

from __future__ import annotations


class CgplanError(Exception):
    """Root of every error cgplan reports as a one-line message instead of a traceback."""

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
        if self.path in COMMAND_LINE_PATHS or self.path.startswith("--vllm-args"):
            return self  # a command-line option: the file is not where it went wrong
        err.source = source
        err.message = f"{source}:{self.path}: {self.problem}" if self.path else f"{source}: {self.problem}"
        err.args = (err.message,)
        return err


COMMAND_LINE_PATHS = frozenset(
    {
        "--vllm-version",
        "--platform",
        "--model-runner",
        "--set",
        "--policy",
        "--max-graphs",
        "--max-sizes",
        "--traffic",
        "--python",
        "--against",
    }
)
"""Error paths that name a cgplan option rather than a key of the file being read."""


class ConfigRejected(ConfigError):
    """A well-formed config that the chosen vLLM release refuses to start with."""
