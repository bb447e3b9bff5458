#!/usr/bin/env python3
"""Rewrite relative `model:` paths in the project's YAML configs from "relative to the file" to
"relative to the repository root", the working directory cgplan's commands and tests run from.

cgplan reads a relative `model:` (and `speculative_config.model`, `cgplan.model_config`) from the
working directory, as vLLM does (`vllm serve --config FILE` hands the string to Hugging Face's
loader, which opens it relative to the process). A config written for the older rule (relative to
its own folder) is rewritten when its path exists from the file's folder and not from the root.

    python3 scripts/model_paths_from_root.py            # rewrite in place, list the files
    python3 scripts/model_paths_from_root.py --check    # exit 1 if any file needs it (CI)
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINE = re.compile(
    r"^(?P<head>\s*(?:model|model_config|model-config):\s+)"
    r"(?P<q>['\"]?)(?P<path>[^'\"#\s]+)(?P=q)(?P<tail>\s*(?:#.*)?)$"
)
FOLDERS = ("configs", "tests", "benchmarks", "docs")


def rewrite(text: str, folder: Path) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        m = LINE.match(body)
        if m and not os.path.isabs(m["path"]) and not m["path"].startswith("~"):
            from_file = (folder / m["path"]).resolve()
            from_root = (ROOT / m["path"]).resolve()
            if from_file.exists() and not from_root.exists() and from_file.is_relative_to(ROOT):
                new = os.path.relpath(from_file, ROOT)
                body = f"{m['head']}{m['q']}{new}{m['q']}{m['tail']}"
                line = body + ("\n" if line.endswith("\n") else "")
        out.append(line)
    return "".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only report; exit 1 when a file needs it")
    args = ap.parse_args()
    changed = []
    for top in FOLDERS:
        for path in sorted((ROOT / top).rglob("*.y*ml")):
            text = path.read_text(encoding="utf-8")
            new = rewrite(text, path.parent)
            if new != text:
                changed.append(path.relative_to(ROOT))
                if not args.check:
                    path.write_text(new, encoding="utf-8")
    for p in changed:
        print(p)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
