#!/usr/bin/env python3
"""Print vLLM's own `vllm serve` argument table as JSON, for cgplan's serve-flag check.

Run with a release's oracle venv (CPU only, the same fake platform as cgplan/gpu/vllm_oracle.py):

    .cache/venv-0.33.0/bin/python scripts/oracle/serve_flags.py > tests/data/oracle-serve-flags/0.33.0.json

`make golden` records every supported release this way. The parser is the one `vllm serve` builds,
`make_arg_parser(FlexibleArgumentParser())`, imported from where vllm/entrypoints/cli/serve.py takes
it. One entry per argparse action: the option strings it accepts and those its help shows, dest,
nargs, action class and default (when it is a JSON scalar). tests/core/vllm/test_serve_flags_recorded.py
holds cgplan/core/vllm/serve_flags.py to it.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import sys
from pathlib import Path


def main() -> int:
    engine = Path(__file__).resolve().parents[2] / "cgplan" / "gpu" / "vllm_oracle.py"
    spec = importlib.util.spec_from_file_location("cgplan_oracle", engine)
    assert spec is not None and spec.loader is not None
    oracle = importlib.util.module_from_spec(spec)
    sys.modules["cgplan_oracle"] = oracle
    spec.loader.exec_module(oracle)
    oracle.setup_process()  # stubs and the fake CUDA platform: EngineArgs' defaults need a device
    import vllm
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    # The module `vllm serve` takes make_arg_parser from moves between releases (openai/, launchers/,
    # common/): read it from vllm/entrypoints/cli/serve.py, which itself imports the HTTP server.
    serve = Path(vllm.__file__).parent / "entrypoints" / "cli" / "serve.py"
    source = next(
        node.module
        for node in ast.walk(ast.parse(serve.read_text()))
        if isinstance(node, ast.ImportFrom) and any(a.name == "make_arg_parser" for a in node.names)
    )
    cli_args = importlib.import_module(source)
    parser = cli_args.make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
    actions = []
    for action in parser._actions:
        default = action.default
        if not (default is None or isinstance(default, (bool, int, float, str))):
            default = repr(type(default).__name__)
        accepted = sorted(k for k, a in parser._option_string_actions.items() if a is action)
        actions.append(
            {
                # what argparse accepts (0.33's EnableDisableAction hides --no-enable-x from
                # option_strings, the help, but keeps it registered: still accepted)
                "option_strings": accepted or list(action.option_strings),
                "shown": list(action.option_strings),
                "dest": action.dest,
                "nargs": action.nargs,
                "action": type(action).__name__,
                "default": default,
            }
        )
    actions.sort(key=lambda a: (a["dest"], a["option_strings"]))
    doc = {"vllm_version": vllm.__version__, "parser": cli_args.__name__, "actions": actions}
    json.dump(doc, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
