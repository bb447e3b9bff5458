"""The `cgplan` command line: one small module per command, errors → exit codes."""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import sys
from typing import TYPE_CHECKING

try:  # Ctrl-C while the CLI loads (a second of imports) exits 130 quietly, as later, not a traceback
    from cgplan import __version__
    from cgplan.errors import CgplanError, ExitCode, exit_code_of, one_line
    from cgplan.io.output import flush_stdout, guard_closed_stdout, install_checked_streams, silence_stdout
except KeyboardInterrupt:
    raise SystemExit(130) from None

if TYPE_CHECKING:
    import typer

EPILOG = (
    "Exit codes: 0 ok · 1 gate failed / gaps with --fail-on-gap · 2 bad config, option or report · "
    "3 environment cannot capture (verify: the interpreter cannot answer) · 4 capture failed."
)

COMMANDS = ("plan", "capture", "diff", "sweep", "gate", "logs", "optimize", "env", "calibrate", "verify")
"""Each is `cgplan/cli/<name>.py` with a function `<name>`; only the one being run is imported."""

CONTEXT = {"help_option_names": ["-h", "--help"]}


def _version(value: bool) -> None:
    import typer

    if value:
        typer.echo(f"cgplan {__version__}")
        raise typer.Exit()


def build_app(only: str | None = None) -> typer.Typer:
    """The typer app with every command, or with `only` that one (the fast path of a run).

    typer builds click parameters for every registered command when the app starts (inspecting
    signatures and annotations), and each command module pulls in its implementation; a run names
    its command first, so only that one is registered and imported.
    """
    import typer  # here, not at import: `plan FILE [--json]` runs without it (_fast_plan)

    def _root(
        version: bool = typer.Option(
            False, "--version", "-V", callback=_version, is_eager=True, help="Show the version."
        ),
    ) -> None:
        """CUDA-graph capture planner and profiler for vLLM."""

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


def _fast_plan(args: list[str]) -> tuple[str, bool] | None:
    """(CONFIG, json) when `args` is `plan CONFIG` or `plan CONFIG --json` (either order) with
    CONFIG a file or `-`: run without building the typer app or importing typer (its import is
    most of a start-up; issue 18). What `plan` does with these arguments is the same code
    (`cgplan.cli._plan_run.run_plan`); every other command line goes through typer."""
    if not 2 <= len(args) <= 3 or args[0] != "plan" or (len(args) == 3 and "--json" not in args[1:]):
        return None
    config = args[1] if len(args) == 2 or args[2] == "--json" else args[2]
    if config in ("serve", "vllm", "--json") or (config.startswith("-") and config != "-"):
        return None
    return config, len(args) == 3


def _run_fast_plan(config: str, json_out: bool) -> int:
    """`cgplan plan CONFIG [--json]` as typer would run it: Ctrl-C exits 130, EOF aborts, a reader
    that went away exits 1 (typer's own handling of a command's exceptions, in `typer.core._main`)."""
    from cgplan.cli._plan_run import run_plan

    try:
        run_plan(targets=[config], json_out=json_out)
    except EOFError:
        sys.stderr.write("\ncgplan: aborted\n")
        return 130
    except KeyboardInterrupt:
        return 130
    except OSError as e:
        if e.errno != errno.EPIPE:
            raise
        silence_stdout()
        return 1
    return 0


def _run_app(args: list[str], completing: bool) -> int:
    """The typer app, non-standalone, its usage errors as one line."""
    try:  # typer and the command's own modules load here
        import typer

        app = build_app(None if completing else _command_named(args))
    except KeyboardInterrupt:
        sys.exit(130)
    try:
        # typer builds the click command inside this call, before click's own Ctrl-C handler (which
        # turns it into Abort) is in place: a Ctrl-C then is a KeyboardInterrupt here
        code = app(args=args, prog_name="cgplan", standalone_mode=False)
    except KeyboardInterrupt:
        code = 130
    except typer.Abort:
        sys.stderr.write("cgplan: aborted\n")
        code = 130
    except typer.TyperException as e:  # click's UsageError, BadParameter, FileError, ...
        code = _usage_error(e)
    return code if isinstance(code, int) else 0


def main(argv: list[str] | None = None, *, process_exit: bool = False) -> None:
    """Run the app; a CgplanError or a usage error is one line.

    typer runs in non-standalone mode so its usage errors come back as exceptions, printed here as
    one line (exit 2); `--help` and `typer.Exit` come back as exit codes, Ctrl-C as 130.
    `plan CONFIG [--json]` runs without typer (`_fast_plan`); with `process_exit` (the process's
    own entry points, not a caller in the same process) it then ends the process at once.
    """
    guard_closed_stdout()
    restore = install_checked_streams()  # every write whole, on any stdout/stderr (issue 33)
    try:
        code, fast = _main(argv)
    finally:
        restore()
    if fast and process_exit:
        _exit_now(code)
    sys.exit(code)


def _main(argv: list[str] | None) -> tuple[int, bool]:
    """`main` with the streams in place: (exit code, whether the fast path ran)."""
    args = sys.argv[1:] if argv is None else argv
    # Shell completion asks about every command: build the whole app for it.
    completing = any(k.endswith("_COMPLETE") for k in os.environ)
    fast = None if completing else _fast_plan(args)
    try:
        try:
            code = _run_fast_plan(*fast) if fast is not None else _run_app(args, completing)
        finally:
            flush_stdout()  # what is still buffered: a full disk there is an error too
    except CgplanError as e:
        sys.stderr.write(f"cgplan: error: {one_line(e.message)}\n")
        code = int(exit_code_of(e))
    except BrokenPipeError:  # click's own output (--help | head): the reader went away
        silence_stdout()
        code = 0
    except OSError as e:  # click's own output to a full disk or a closed stdout
        if e.errno not in (errno.EBADF, errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG):
            raise
        silence_stdout()
        sys.stderr.write(f"cgplan: error: <stdout>: cannot write: {e.strerror or e}\n")
        code = int(ExitCode.USAGE)
    return code, fast is not None


def _exit_now(code: int) -> None:
    """End the process with `code` without the interpreter's teardown: `plan CONFIG [--json]` has
    written and flushed everything, opened no file and started no thread, and no module it loads
    registers an exit handler; tearing down its modules and objects was 10-18 ms of a 120 ms run
    (issue 18). Whatever cannot be flushed now is reported as at a normal exit."""
    try:
        sys.stdout.flush()
    except OSError:
        silence_stdout()
        code = code or 1
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: started with stderr closed
        sys.stderr.flush()
    os._exit(code)


def console_main() -> None:
    """The `cgplan` console script (and `python -m cgplan`): `main` for the whole process."""
    main(process_exit=True)


def gate_main() -> None:
    """The `cgplan-gate` console script: `cgplan gate ARGS...` (scripts/cgplan-gate in a checkout)."""
    main(["gate", *sys.argv[1:]], process_exit=True)
