"""The `cgplan` command line: one small module per command, errors → exit codes."""

from __future__ import annotations

import errno
import sys

import typer

from cgplan import __version__
from cgplan.cli import calibrate as calibrate_cmd
from cgplan.cli import capture as capture_cmd
from cgplan.cli import diff as diff_cmd
from cgplan.cli import env as env_cmd
from cgplan.cli import gate as gate_cmd
from cgplan.cli import logs as logs_cmd
from cgplan.cli import optimize as optimize_cmd
from cgplan.cli import plan as plan_cmd
from cgplan.cli import sweep as sweep_cmd
from cgplan.errors import CgplanError, ExitCode, one_line
from cgplan.files import flush_stdout, guard_closed_stdout, silence_stdout

EPILOG = (
    "Exit codes: 0 ok · 1 gate failed / gaps with --fail-on-gap · 2 bad config, option or report · "
    "3 environment cannot capture · 4 capture failed."
)

app = typer.Typer(
    name="cgplan",
    help="CUDA-graph capture planner and profiler for vLLM.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    epilog=EPILOG,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"cgplan {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version."
    ),
) -> None:
    """CUDA-graph capture planner and profiler for vLLM."""


app.command("plan", epilog=EPILOG)(plan_cmd.plan)
app.command("capture", epilog=EPILOG)(capture_cmd.capture)
app.command("diff", epilog=EPILOG)(diff_cmd.diff)
app.command("sweep", epilog=EPILOG)(sweep_cmd.sweep)
app.command("gate", epilog=EPILOG)(gate_cmd.gate)
app.command("logs", epilog=EPILOG)(logs_cmd.logs)
app.command("optimize", epilog=EPILOG)(optimize_cmd.optimize)
app.command("env", epilog=EPILOG)(env_cmd.env)
app.command("calibrate", epilog=EPILOG)(calibrate_cmd.calibrate)


def main() -> None:
    """Console-script entry point: run the app, turn CgplanError into a one-line message.

    Click (inside typer) handles its own usage errors (exit 2), Ctrl-C and --help.
    """
    guard_closed_stdout()
    try:
        try:
            app()
        finally:
            flush_stdout()  # what is still buffered: a full disk there is an error too
    except CgplanError as e:
        sys.stderr.write(f"cgplan: error: {one_line(e.message)}\n")
        sys.exit(int(e.exit_code))
    except BrokenPipeError:  # click's own output (--help | head): the reader went away
        silence_stdout()
        sys.exit(0)
    except OSError as e:  # click's own output to a full disk or a closed stdout
        if e.errno not in (errno.EBADF, errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG):
            raise
        silence_stdout()
        sys.stderr.write(f"cgplan: error: <stdout>: cannot write: {e.strerror or e}\n")
        sys.exit(int(ExitCode.USAGE))
