"""The `cgplan` command line: one small module per command, errors → exit codes."""

from __future__ import annotations

import errno
import importlib
import os
import sys

try:  # Ctrl-C while the CLI loads (a second of imports) exits 130 quietly, as later, not a traceback
    import typer

    from cgplan import __version__
    from cgplan.errors import CgplanError, ExitCode, one_line
    from cgplan.io.output import flush_stdout, guard_closed_stdout, silence_stdout
except KeyboardInterrupt:
    raise SystemExit(130) from None

EPILOG = (
    "Exit codes: 0 ok · 1 gate failed / gaps with --fail-on-gap · 2 bad config, option or report · "
    "3 environment cannot capture · 4 capture failed."
)

COMMANDS = ("plan", "capture", "diff", "sweep", "gate", "logs", "optimize", "env", "calibrate")
"""Each is `cgplan/cli/<name>.py` with a function `<name>`; only the one being run is imported."""

CONTEXT = {"help_option_names": ["-h", "--help"]}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cgplan {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version, is_eager=True, help="Show the version."
    ),
) -> None:
    """CUDA-graph capture planner and profiler for vLLM."""


def build_app(only: str | None = None) -> typer.Typer:
    """The typer app with every command, or with `only` that one (the fast path of a run).

    typer builds click parameters for every registered command when the app starts (inspecting
    signatures and annotations), and each command module pulls in its implementation; a run names
    its command first, so only that one is registered and imported.
    """
    app = typer.Typer(
        name="cgplan",
        help="CUDA-graph capture planner and profiler for vLLM.",
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        epilog=EPILOG,
        context_settings=CONTEXT,
    )
    app.callback()(_root)
    for name in COMMANDS if only is None else (only,):
        module = importlib.import_module(f"cgplan.cli.{name}")
        app.command(name, epilog=EPILOG, context_settings=CONTEXT)(getattr(module, name))
    return app


def _command_named(argv: list[str]) -> str | None:
    """The subcommand `argv` runs, when it is plain to see (first word, a known command)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def _usage_error(e: typer.TyperException) -> int:
    """A usage error as one line (`cgplan plan: error: ...`), not typer's multi-line box."""
    ctx = getattr(e, "ctx", None)
    where = ctx.command_path if ctx is not None else "cgplan"
    hint = f" (see {where} -h)" if ctx is not None else ""
    sys.stderr.write(f"{where}: error: {one_line(e.format_message())}{hint}\n")
    return int(getattr(e, "exit_code", 2))


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app; a CgplanError or a usage error is one line.

    typer runs in non-standalone mode so its usage errors come back as exceptions, printed here as
    one line (exit 2); `--help` and `typer.Exit` come back as exit codes, Ctrl-C as 130.
    """
    guard_closed_stdout()
    args = sys.argv[1:] if argv is None else argv
    # Shell completion asks about every command: build the whole app for it.
    completing = any(k.endswith("_COMPLETE") for k in os.environ)
    try:  # the command's own modules load here
        app = build_app(None if completing else _command_named(args))
    except KeyboardInterrupt:
        sys.exit(130)
    try:
        try:
            code = app(args=args, prog_name="cgplan", standalone_mode=False)
        finally:
            flush_stdout()  # what is still buffered: a full disk there is an error too
    except CgplanError as e:
        sys.stderr.write(f"cgplan: error: {one_line(e.message)}\n")
        code = int(e.exit_code)
    except typer.Abort:
        sys.stderr.write("cgplan: aborted\n")
        code = 130
    except typer.TyperException as e:  # click's UsageError, BadParameter, FileError, ...
        code = _usage_error(e)
    except BrokenPipeError:  # click's own output (--help | head): the reader went away
        silence_stdout()
        code = 0
    except OSError as e:  # click's own output to a full disk or a closed stdout
        if e.errno not in (errno.EBADF, errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG):
            raise
        silence_stdout()
        sys.stderr.write(f"cgplan: error: <stdout>: cannot write: {e.strerror or e}\n")
        code = int(ExitCode.USAGE)
    sys.exit(code if isinstance(code, int) else 0)


def gate_main() -> None:
    """The `cgplan-gate` console script: `cgplan gate ARGS...` (scripts/cgplan-gate in a checkout)."""
    main(["gate", *sys.argv[1:]])
