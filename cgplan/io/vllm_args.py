"""A `vllm serve` command line → a cgplan config document, read the way vLLM's own parser reads it.

Mirrors `FlexibleArgumentParser.parse_args` (vllm/utils/argparse_utils.py, the same in 0.26-0.33):

* `vllm serve MODEL` or `--model MODEL` (moved to the front, as vLLM does; the positional wins);
* `--config FILE.yaml`: its keys become flags inserted right after the model, so every flag on the
  command line wins over the file; nested mappings become JSON values, `true` → `--key`,
  `false` → `--no-key`, lists → `--key a b c`. A `cgplan:` mapping in the file is cgplan's own section;
* `--snake_case` and `--dash-case` names (only the part before the first `.` is normalised);
* `-O3`, `-O=3`, `-O 3` → `--optimization-level 3`;
* dotted keys `--compilation-config.cudagraph_mode FULL`, `-cc.max_cudagraph_capture_size=544`,
  `-cc.cudagraph_capture_sizes+ 1,2` (list append): JSON values, else human-readable integers, else
  strings; merged per spelling into one JSON value placed after every other flag. Like vLLM, that merged
  value *replaces* a whole JSON value given for the same flag (`-cc '{...}' -cc.key=v` keeps only `key`);
* `human_readable_int` for `--max-num-batched-tokens` and `--max-model-len` (`8k` = 8000, `8K` = 8192,
  `auto`/`-1` for the model's own length) and bare `8k` tokens inside `--compilation-config` JSON;
* the engine's cross-flag rules: `--spec-method/--spec-model/--spec-tokens` fill `--speculative-config`,
  `--max-cudagraph-capture-size`, `--cudagraph-capture-sizes` and `--attention-backend` are mutually
  exclusive with the same key inside their JSON config.

Every rejection is a ConfigError located as `--vllm-args:<flag>: problem (got X; expected Y)`; a value that
came from the `--config` file is located as `--vllm-args:<file>:<key>`.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from cgplan.core.vllm.releases import LATEST_VERSION
from cgplan.core.vllm.serve_flags import (
    IGNORED,
    READ,
    SERVE_FLAGS,
    UNMODELLED,
    ServeFlag,
    ServeFlags,
    serve_flags_for,
    unmodelled_problem,
)
from cgplan.errors import ConfigError
from cgplan.io.config import Overrides, _err, _key
from cgplan.io.deploy import Deployed, docker_command, environment, image_release, is_docker_run
from cgplan.io.files import ReadError, parse_yaml, read_text
from cgplan.io.numbers import human_readable_int

_T = TypeVar("_T")

SOURCE = "vllm-args"
"""The `source` of a plan read from a command line (the JSON contract's `source` field)."""

PREFIX = "--vllm-args"
API_SERVER = "vllm.entrypoints.openai.api_server"
"""The OpenAI server module: `python -m` it with serve's flags (MODEL only as --model)."""
"""Every located message from this module starts with it."""


# ---------------------------------------------------------------------------------------------- flags
# The table itself is cgplan.core.vllm.serve_flags (per release).


@dataclass(frozen=True)
class _Index:
    """A release's flag table, by every option string: (flag, positive form?)."""

    by_name: dict[str, tuple[ServeFlag, bool]]
    long_names: tuple[str, ...]
    flags: ServeFlags


@functools.cache
def _index(flags: ServeFlags) -> _Index:
    by_name: dict[str, tuple[ServeFlag, bool]] = {}
    for f in flags.flags:
        for n in f.names:
            by_name[n] = (f, True)
        for n in f.negatives:
            by_name[n] = (f, False)
    return _Index(by_name, tuple(f.names[0] for f in flags.flags), flags)


READ_FLAGS = serve_flags_for(None).names(READ)
"""The flags cgplan reads (plus `--config FILE`), in the newest release."""
IGNORED_FLAGS = serve_flags_for(None).names(IGNORED)
"""Flags accepted and listed as capture-neutral, in the newest release."""
UNMODELLED_FLAGS = serve_flags_for(None).names(UNMODELLED)
"""Flags that can change what cgplan predicts but that it does not model: planned without them, with
a note (refused under --strict) unless at vLLM's default."""

_UNMODELLED_PROBLEM = (
    "changes what vLLM captures, but cgplan does not model it yet; remove it to plan without it"
)
_Put = Callable[[str, Any, "_Val"], None]

_CGPLAN_OPTIONS = frozenset(
    [
        "--model-config",
        "--vllm-version",
        "--platform",
        "--model-runner",
        "--json",
        "--markdown",
        "--full",
        "--output",
        "-o",
        "--no-color",
        "--fail-on-gap",
        "--vllm-args",
    ]
)
"""`cgplan plan` options: after `--` they are a mistake worth naming."""
_MAX_DOTS = 16
_NEGATIVE_NUMBER = re.compile(r"-\d+|-\d*\.\d+")
_JSON_STRING = re.compile(r'("(?:[^"\\]|\\.)*")')
_BARE_HUMAN_INT = re.compile(r"\b\d+(?:\.\d+)?[kKmMgGtT]\b")


# ------------------------------------------------------------------------------------------- helpers


def _short(text: str, limit: int = 60) -> str:
    """A token as it appears in a location: bounded, one line."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fail(loc: str, problem: str, got: object = ..., expected: str | None = None) -> ConfigError:
    return _err(f"{PREFIX}:{loc}" if loc else PREFIX, problem, got, expected)


def _expand_json_human_ints(text: str) -> str:
    """vLLM's `_expand_json_human_readable_numbers`: bare `8k` tokens outside JSON strings → integers."""
    parts = _JSON_STRING.split(text)
    for i in range(0, len(parts), 2):
        parts[i] = _BARE_HUMAN_INT.sub(lambda m: str(human_readable_int(m.group())), parts[i])
    return "".join(parts)


def split_vllm_args(text: str) -> list[str]:
    """Split one `--vllm-args` string the way a POSIX shell would (shlex).

    >>> split_vllm_args("serve m -sc '{\\"method\\": \\"eagle\\"}'")
    ['serve', 'm', '-sc', '{"method": "eagle"}']

    Raises:
        ConfigError: unbalanced quotes.
    """
    try:
        return shlex.split(text)
    except ValueError as e:
        raise _fail(
            "", f"cannot split the command line: {e}", text, "shell quoting, as typed in a shell"
        ) from None


@dataclass
class _Tok:
    """One command-line token; `file` and `key` say where in the --config file it came from."""

    text: str
    file: str | None = None
    key: str | None = None
    shown: str | None = None  # how the user spelled the flag, when normalising changed it (-O3 → -O)
    dotted: bool = False  # the merged value of `-cc.key=value` forms

    @property
    def origin(self) -> str | None:
        if self.file is None:
            return None
        return f"{self.file}:{self.key}" if self.file else self.key  # file "": the document itself

    def like(self, text: str, shown: str | None = None) -> _Tok:
        return _Tok(text, self.file, self.key, shown if shown is not None else self.shown, self.dotted)


@dataclass
class _Val:
    """The value a flag ended up with (the last occurrence wins, as in argparse)."""

    flag: ServeFlag
    positive: bool
    raw: Any  # str, list[str], None (optional/flag forms)
    loc: str  # where to point an error: the flag as written, or file:key
    dotted: bool = False

    @property
    def spelled(self) -> str:
        return f"{self.loc}.key=value" if self.dotted else self.loc


@dataclass
class VllmArgs:
    """A command line read into cgplan's config schema, plus where each key came from."""

    doc: dict[str, Any]
    ignored: list[str]
    where: dict[str, str] = field(default_factory=dict)  # doc path → located error path
    unmodelled: list[str] = field(default_factory=list)
    """Flags set away from vLLM's default that cgplan does not model, each as a note (`flag value:
    can change X, which cgplan does not model; planned as if ...`)."""
    notes: list[str] = field(default_factory=list)
    """How vLLM read something that is not literal (a `key: false` its --config reader drops)."""
    document: bool = False
    """Read from a YAML config's top level (`read_config_document`): errors at its keys."""
    given: frozenset[str] = frozenset()
    """The dests of every flag given (the command line and its --config file)."""

    def locate(self, err: ConfigError) -> ConfigError:
        """The same error (same class), pointing at the flag (or --config key) that set the value."""
        if err.path.startswith("--"):
            return err
        path = err.path
        best = ""
        for key in self.where:
            if (path == key or path.startswith((key + ".", key + "["))) and len(key) > len(best):
                best = key
        if best:
            new_path = self.where[best] + path[len(best) :]
        elif self.document:
            return err
        elif path:
            top, dot, rest = path.partition(".")
            new_path = f"{PREFIX}:--{top.replace('_', '-')}{dot}{rest}"
        else:
            new_path = PREFIX
        located = err.__class__.__new__(err.__class__)
        located.__dict__.update(err.__dict__)
        located.path = new_path
        located.source = None
        located.message = f"{new_path}: {err.problem}"
        located.args = (located.message,)
        return located


# ------------------------------------------------------------------------------------------ reading


_ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)


def _env_prefix(args: list[str]) -> tuple[dict[str, str], list[str]]:
    """Shell assignments before the command (`TORCH_COMPILE_DISABLE=1 vllm serve ...`, also after
    `env`): vLLM's environment, which cgplan reads as `cgplan.env`."""
    env: dict[str, str] = {}
    i = 0
    if args[:1] == ["env"]:
        i = 1
    while i < len(args) and _ENV_ASSIGNMENT.fullmatch(args[i]):
        name, _, value = args[i].partition("=")
        env[name] = value
        i += 1
    return env, args[i:] if env or i else args


def _strip_program(args: list[str]) -> list[str]:
    """Drop `vllm` and `serve` (or `python -m vllm.entrypoints.openai.api_server`, whose flags are
    serve's); refuse other vLLM subcommands."""
    prog = args[0].rsplit("/", 1)[-1] if args else ""
    if prog.startswith("python") and args[1:2] == ["-m"]:
        if args[2:3] != [API_SERVER]:
            raise _fail(
                "",
                "not a vLLM server command line",
                " ".join(args[:3]),
                f"python -m {API_SERVER} --model MODEL",
            )
        return args[3:]
    if prog == "vllm":
        args = args[1:]
    if not args:
        raise _fail("", "empty command line", expected="serve MODEL [flags]")
    if args[0] == "serve":
        return args[1:]
    if args[0].startswith("-"):  # the api_server entry point: flags only
        return args
    raise _fail(
        "", "not a `vllm serve` command line", args[0], "serve MODEL [flags] (a YAML goes in as CONFIG alone)"
    )


def _move_model_flag(args: list[str]) -> list[str]:
    """vLLM moves the first `--model X` / `--model=X` to the positional slot."""
    for i, arg in enumerate(args):
        if arg == "--model":
            if i + 1 >= len(args):
                raise _fail("--model", "expects a value", expected="a model folder or hub name")
            return [args[i + 1], *args[:i], *args[i + 2 :]]
        if arg.startswith("--model="):
            return [arg.removeprefix("--model="), *args[:i], *args[i + 1 :]]
    return args


def _load_config_file(name: str, base_dir: Path) -> tuple[Mapping[Any, Any], str]:
    """vLLM's `load_config_file`, first half: the YAML file read (`yaml.safe_load`'s document)."""
    if name.split(".")[-1] not in ("yaml", "yml"):
        raise _fail("--config", "the config file must be YAML", name, "a .yaml or .yml file")
    path = Path(name).expanduser()
    if not path.is_absolute():
        path = base_dir / path
    label = _short(name)
    try:
        text = read_text(path, what="config file", source=label, keep_bom=True)
    except ReadError as e:  # no such file, a FIFO, /dev/zero, undecodable bytes, too large
        raise _fail("--config", e.problem, name) from None
    try:
        raw = parse_yaml(text, label, exact=True)  # yaml.safe_load's reading
    except ReadError as e:  # bad YAML, an alias bomb, a tag, a 5,000-digit number
        raise _fail(f"{label}:{e.key_path}" if e.key_path else label, e.problem) from None
    if not isinstance(raw, Mapping):
        raise _fail(label, "must be a mapping of vllm serve keys", raw, "key: value pairs")
    return raw, label


def _cgplan_section(raw: Mapping[Any, Any], label: str) -> dict[str, Any]:
    """The file's `cgplan:` mapping (cgplan's own keys; vLLM has no such flag)."""
    value = raw.get("cgplan")
    if not value and not isinstance(value, str):  # absent, null or empty: as the direct reading
        return {}
    if not isinstance(value, Mapping):
        where = f"{label}:cgplan" if label else "cgplan"
        raise _fail(where, "must be a mapping", value, "key: value pairs")
    return dict(value)


def _file_tokens(raw: Mapping[Any, Any], label: str, ix: _Index, notes: list[str]) -> list[_Tok]:
    """vLLM's `load_config_file`, second half: each key as flag tokens (origin-tagged), `cgplan:`
    set aside; `notes` gets each `key: false` vLLM drops where that changes a read flag."""
    toks: list[_Tok] = []
    for key, value in raw.items():
        if not isinstance(key, str):
            raise _fail(label, "keys must be strings", key)
        if key == "cgplan":
            continue
        flag = _Tok("--" + key, label, _short(key) if label else _key(key))
        try:
            toks += _config_tokens(flag, value, ix, notes)
        except (ValueError, TypeError, RecursionError):  # a cycle, a 5,000-digit number
            raise _fail(flag.origin or label, "cannot be passed as a flag value", value) from None
    return toks


def _config_tokens(flag: _Tok, value: object, ix: _Index, notes: list[str]) -> list[_Tok]:
    """One YAML key → its flag tokens, as `load_config_file` builds them: `true` → `--key`, `false` →
    `--no-key` where the parser has that very string (0.28+; the key as written, so `enforce_eager:
    false` finds no `--no-enforce_eager` and is dropped), a list → `--key a b`, a mapping → JSON."""
    if isinstance(value, bool):
        entry = ix.by_name.get(_normalise(flag.text))
        if value and entry is not None and entry[0].arity in ("one", "many"):
            raise _fail(
                flag.origin or flag.text,
                f"expects a value, not true (vLLM's --config reader makes `true` the bare flag "
                f"{entry[0].names[0]}, which argparse refuses)",
                value,
                f"{flag.text[2:]}: VALUE",
            )
        if value or entry is None:  # an unknown key is still reported, whatever its value
            return [flag]
        no_key = "--no-" + flag.text[2:]
        if ix.flags.config_false_forms and no_key in ix.by_name:
            return [flag.like(no_key)]
        if entry[0].role != IGNORED and entry[0].arity == "bool":
            dashed = flag.text[2:].replace("_", "-")
            how = (
                f"it looks for {no_key}, which is not an option: write {dashed}: false"
                if ix.flags.config_false_forms
                else "this release drops every `key: false`: pass --no-... on the command line"
            )
            notes.append(
                f"{flag.origin}: false is dropped by vLLM's --config reader ({how}), so vLLM keeps "
                f"{entry[0].names[0]}'s default"
            )
        return []
    entry = ix.by_name.get(_normalise(flag.text))
    if entry is not None and entry[0].arity in ("bool", "none") and value != []:  # `--flag VALUE`: refused
        raise _fail(flag.origin or flag.text, "must be true or false", value, "a boolean")
    if isinstance(value, list):
        return [flag, *(flag.like(str(item)) for item in value)] if value else []
    if isinstance(value, dict):
        return [flag, flag.like(json.dumps(value))]  # vLLM: a date in it fails too
    return [flag, flag.like(str(value))]


def _normalise(text: str) -> str:
    """`--snake_case.key` → `--snake-case.key`: only the part before the first dot (vLLM's regex)."""
    head, dot, rest = text[2:].partition(".")
    return "--" + head.replace("_", "-") + dot + rest


def _dash_pass(toks: list[_Tok]) -> list[_Tok]:
    """Underscores → dashes in flag names; `-O3`, `-O=3`, `-O 3` → `--optimization-level 3`."""
    out: list[_Tok] = []
    for i, tok in enumerate(toks):
        arg = tok.text
        if arg.startswith("--"):
            key, eq, value = arg.partition("=")
            out.append(tok.like(_normalise(key) + eq + value))
        elif arg.startswith("-O") and arg != "-O":
            level = arg[3:] if arg[2] == "=" else arg[2:]
            out += [tok.like("--optimization-level", "-O"), tok.like(level)]
        elif arg == "-O" and i + 1 < len(toks) and toks[i + 1].text in {"0", "1", "2", "3"}:
            out.append(tok.like("--optimization-level", "-O"))
        else:
            out.append(tok)
    return out


def _nested(keys: list[str], value: Any) -> dict[str, Any]:
    nested: Any = value
    for key in reversed(keys):
        nested = {key: nested}
    return dict(nested)


def _merge(original: dict[str, Any], update: dict[str, Any]) -> None:
    """vLLM's `recursive_dict_update`: nested dicts merge, lists concatenate, the rest is replaced."""
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(original.get(k), dict):
            _merge(original[k], v)
        elif isinstance(v, list) and isinstance(original.get(k), list):
            original[k] += v
        else:
            original[k] = v


def _dotted_pass(toks: list[_Tok]) -> list[_Tok]:
    """`--x.a.b v`, `-cc.a=v`, `--x.list+ 1,2` → one JSON value per spelling, appended at the end."""
    delete: set[int] = set()
    merged: dict[str, dict[str, Any]] = {}
    first: dict[str, _Tok] = {}
    for i, tok in enumerate(toks):
        if i in delete:
            continue
        arg = tok.text
        if (arg.startswith("--") and "." not in arg) or not (arg.startswith("-") and "." in arg):
            continue
        if "=" in arg:
            arg, value_str = arg.split("=", 1)
            if "." not in arg:  # the dot was only in the value
                continue
        else:
            if i + 1 >= len(toks):
                raise _fail(tok.origin or arg, "expects a value", expected=f"{arg} VALUE")
            value_str = toks[i + 1].text
            delete.add(i + 1)
        if arg.endswith("+"):
            arg = arg[:-1]
            value_str = json.dumps(value_str.split(","))
        key, *keys = arg.split(".")
        if len(keys) > _MAX_DOTS:
            raise _fail(
                tok.origin or _short(arg), "nested too deeply", expected=f"at most {_MAX_DOTS} dotted keys"
            )
        value: Any
        try:
            value = json.loads(value_str)
        except (ValueError, RecursionError):
            try:
                value = human_readable_int(value_str)
            except ValueError:
                value = value_str
        _merge(merged.setdefault(key, {}), _nested(keys, value))
        if key not in first:
            file_key = key.lstrip("-").replace("-", "_") if tok.file is not None else None
            first[key] = _Tok(key, tok.file, file_key, dotted=True)
        delete.add(i)
    out = [t for i, t in enumerate(toks) if i not in delete]
    for key, value in merged.items():
        out += [first[key], first[key].like(json.dumps(value))]
    return out


def _option_like(text: str, ix: _Index) -> bool:
    """argparse's `_parse_optional`: is this token a flag (known or not), or a value/positional?"""
    if not text.startswith("-") or text == "-":
        return False
    if text in ix.by_name or text.partition("=")[0] in ix.by_name:
        return True
    return not _NEGATIVE_NUMBER.fullmatch(text) and " " not in text


def _parse(toks: list[_Tok], ix: _Index) -> tuple[_Tok | None, dict[str, _Val], dict[str, list[_Val]]]:
    """The argparse step: positional model, then each flag's last value (history kept for JSON flags)."""
    model: _Tok | None = None
    values: dict[str, _Val] = {}
    history: dict[str, list[_Val]] = {}
    i = 0
    previous: tuple[ServeFlag, str] | None = None
    while i < len(toks):
        tok = toks[i]
        i += 1
        if not _option_like(tok.text, ix):
            if model is None and tok.origin is None:
                model = tok
                continue
            if previous is None:
                raise _fail(tok.origin or tok.text, "unexpected argument", tok.text, "--flag VALUE pairs")
            flag, loc = previous
            if flag.arity in ("bool", "none"):
                use = f"; use {flag.negatives[0]} for false" if flag.negatives else ""
                raise _fail(loc, f"takes no value{use}", tok.text, flag.names[0])
            raise _fail(loc, "unexpected extra argument after its value", tok.text, "--flag VALUE pairs")
        name, explicit = tok.text, None
        if name not in ix.by_name and "=" in name:
            name, explicit = name.split("=", 1)
        shown = tok.shown or name
        loc = tok.origin or shown
        entry = ix.by_name.get(name)
        if entry is None:
            raise _unknown(name, tok.origin, ix, word="key" if tok.file == "" else "flag")
        flag, positive = entry
        previous = (flag, loc)
        raw: Any
        if flag.arity in ("bool", "none"):
            if explicit is not None:
                use = f"; use {flag.negatives[0]} for false" if flag.negatives else ""
                raise _fail(loc, f"takes no value{use}", explicit, shown)
            raw = None
        elif explicit is not None:
            raw = [explicit] if flag.arity == "many" else explicit
        elif flag.arity == "many":
            raw = []
            while i < len(toks) and not _option_like(toks[i].text, ix):
                raw.append(toks[i].text)
                i += 1
            if not raw:
                raise _fail(loc, "expects at least one value", expected=f"{shown} VALUE [VALUE ...]")
        elif i < len(toks) and not _option_like(toks[i].text, ix):
            raw = toks[i].text
            i += 1
        elif flag.arity == "optional":
            raw = None
        else:
            got = toks[i].text if i < len(toks) else ...
            raise _fail(loc, "expects a value", got, f"{shown} VALUE")
        val = _Val(flag, positive, raw, loc, tok.dotted)
        values[flag.dest] = val
        history.setdefault(flag.dest, []).append(val)
    return model, values, history


def _unknown(name: str, origin: str | None, ix: _Index, word: str = "flag") -> ConfigError:
    if name == "--config" or name.startswith("--config="):
        return _fail(
            origin or "--config",
            "vLLM reads a config file only from `--config FILE` (a separate word), once, on the command line",
            name,
            "--config FILE.yaml",
        )
    if name.partition("=")[0] in _CGPLAN_OPTIONS:
        return _fail(
            _short(name),
            f"unknown flag; {name.partition('=')[0]} is a cgplan option: give it before `--`",
            expected="cgplan plan [OPTIONS] -- serve MODEL [FLAGS...]",
        )
    bare = name.partition("=")[0]
    if bare in ("-h", "--help"):
        return _fail(
            origin or _short(name),
            "vllm serve prints its help and exits: there is nothing to plan",
            expected="the flags of the server to plan",
        )
    version = ix.flags.since
    other = [e.since for e in SERVE_FLAGS if bare in _index(e).by_name]
    if other:
        has = other[0] if len(other) == 1 else f"{other[0]} to {other[-1]}"
        return _fail(
            origin or _short(name),
            f"not a flag of vLLM {version}'s vllm serve (it is one of vLLM {has})",
            expected=f"a flag of vLLM {version}, or that release: --vllm-version or cgplan.vllm_version",
        )
    close = difflib.get_close_matches(bare[:80], [*ix.long_names, *ix.by_name], n=1, cutoff=0.6)
    hint = ""
    if close:
        suggestion = close[0][2:].replace("-", "_") if origin else close[0]
        hint = f"; did you mean '{suggestion}'?"
    return _fail(
        origin or _short(name),
        f"unknown {word}{hint}",
        expected=f"a flag of vLLM {version}'s vllm serve",
    )


# -------------------------------------------------------------------------------------- conversion


def _int(val: _Val, *, human: bool = False) -> int:
    text = str(val.raw)
    try:
        return human_readable_int(text) if human else int(text)
    except ValueError as e:
        expected = "an integer such as 8192, 8k (8000) or 8K (8192)" if human else "an integer such as 32"
        if "binary suffixes" in str(e):
            raise _fail(val.loc, str(e), text, expected) from None
        raise _fail(val.loc, "must be an integer", text, expected) from None


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _json_object(val: _Val, *, human: bool, example: str) -> dict[str, Any] | None:
    text = str(val.raw)
    try:
        value = json.loads(_expand_json_human_ints(text) if human else text)
    except ValueError as e:  # also a 5,000-digit number, or 1.5K (a decimal with a binary suffix)
        raise _fail(val.loc, f"invalid JSON: {e}", text, f"a JSON object such as {example}") from None
    except RecursionError:
        raise _fail(val.loc, "invalid JSON: nested too deeply", text[:60]) from None
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _fail(val.loc, "must be a JSON object", value, f"a JSON object such as {example}")
    return value


def _resolve(text: str, base_dir: Path) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else base_dir / path


def _exists(path: Path, *, folder: bool) -> bool:
    """`is_dir()` / `exists()` that treats an unusable name (NUL byte, too long) as absent."""
    try:
        return path.is_dir() if folder else path.exists()
    except (OSError, ValueError):
        return False


def _model(
    model: _Tok | None,
    values: dict[str, _Val],
    model_config: Path | None,
    base_dir: Path,
) -> tuple[str, str]:
    """The folder whose config.json gives the model's shape, and where to point errors about it."""
    if model is not None:
        name, loc = model.text, "MODEL"
    elif "model" in values:
        name, loc = str(values["model"].raw), values["model"].loc
    else:
        raise _fail("MODEL", "missing", expected="serve MODEL, --model MODEL or model: in the --config file")
    if model_config is not None:
        path = _resolve(str(model_config), base_dir)
        if not _exists(path, folder=False):
            raise _err(
                "--model-config", "no such file or folder", str(model_config), "a folder with config.json"
            )
        return str(path), "--model-config"
    hf = values.get("hf_config_path")
    if hf is not None and _exists(_resolve(str(hf.raw), base_dir), folder=True):
        return str(_resolve(str(hf.raw), base_dir)), f"{PREFIX}:{hf.loc}"
    path = _resolve(name, base_dir)
    if _exists(path, folder=True):
        return str(path), f"{PREFIX}:{loc}"
    where = " (relative to the working directory, as vLLM reads it)" if loc != "MODEL" else ""
    raise _fail(
        loc,
        f"not a local folder{where}; a hub model needs --model-config PATH",
        name,
        "a local folder with config.json, or --model-config PATH",
    )


def _release_index(vllm_version: str | None, cgplan_section: Mapping[str, Any]) -> _Index:
    """The flags of the release planned with: --vllm-version, else the file's cgplan.vllm_version."""
    release = vllm_version or cgplan_section.get("vllm_version", cgplan_section.get("vllm-version"))
    return _index(serve_flags_for(release if isinstance(release, str) else None))


def read_vllm_args(
    argv: Sequence[str],
    *,
    model_config: Path | None,
    base_dir: Path,
    vllm_version: str | None = None,
    strict: bool = False,
    deployed: Deployed | None = None,
) -> VllmArgs:
    """Read a `vllm serve` command line into cgplan's config schema (see the module docstring), with
    the flags of `vllm_version` (as given: --vllm-version), else of the --config file's
    `cgplan.vllm_version`, else of the newest release (`serve_flags_for`). A flag cgplan does not
    model, set away from vLLM's default, is a note in `unmodelled`, or refused with `strict`.

    Raises:
        ConfigError: located as `--vllm-args:<flag>: problem (got X; expected Y)`.
    """
    if deployed is None and is_docker_run(argv):
        try:
            deployed = docker_command(argv)
        except ConfigError as e:
            raise _fail(e.path, e.problem) from None
    if deployed is not None:
        argv = deployed.argv
        vllm_version = vllm_version or image_release(deployed.image)
    env, rest = _env_prefix(list(argv))
    args = _move_model_flag(_strip_program(rest))
    for arg in args:
        if arg.startswith("--config="):
            raise _unknown(arg, None, _index(serve_flags_for(vllm_version)))
    cgplan_section: dict[str, Any] = {}
    config_label: str | None = None
    notes: list[str] = []
    toks = [_Tok(a) for a in args]
    if args.count("--config") > 1:
        raise _fail("--config", "given more than once (vLLM refuses that)", expected="one --config FILE")
    if "--config" in args:
        index = args.index("--config")
        if index == len(args) - 1:
            raise _fail("--config", "expects a file", expected="--config FILE.yaml")
        config_label = args[index + 1]
        raw, label = _load_config_file(config_label, base_dir)
        cgplan_section = _cgplan_section(raw, label)
        file_toks = _file_tokens(raw, label, _release_index(vllm_version, cgplan_section), notes)
        model_in_cli = not args[0].startswith("-")
        if not model_in_cli and not any(t.text == "--model" for t in file_toks):
            raise _fail(
                "MODEL",
                "missing: with --config, vLLM wants the model right after `serve` or as model: in the file",
                expected="serve MODEL --config FILE ...",
            )
        head = toks[:1] if model_in_cli else []
        toks = [*head, *file_toks, *toks[len(head) : index], *toks[index + 2 :]]
    ix = _release_index(vllm_version, cgplan_section)
    model, values, history = _parse(_dotted_pass(_dash_pass(toks)), ix)
    if model_config is None:  # cgplan.model_config in the --config file: a hub MODEL's shape
        mc = cgplan_section.get("model_config", cgplan_section.get("model-config"))
        if isinstance(mc, str) and mc.strip():
            model_config = Path(mc)
    parsed = _build(model, values, history, model_config, base_dir, strict=strict)
    parsed.notes[:0] = notes
    if cgplan_section:
        cg = {**cgplan_section, **parsed.doc.get("cgplan", {})}  # --attention-backend wins over the file
        parsed.doc["cgplan"] = cg
        parsed.where["cgplan"] = f"{PREFIX}:{config_label}:cgplan"
    if env:  # the command line's environment wins over the file's cgplan.env
        cg = parsed.doc.setdefault("cgplan", {})
        file_env = cg.get("env")
        cg["env"] = {**(file_env if isinstance(file_env, Mapping) else {}), **env}
        for name in env:
            parsed.where[f"cgplan.env.{name}"] = f"{PREFIX}:{_short(name)}="
    if deployed is not None:
        _apply_deployed(parsed, deployed, vllm_version, strict=strict)
    return parsed


def _apply_deployed(parsed: VllmArgs, d: Deployed, vllm_version: str | None, *, strict: bool) -> None:
    """The image's release and the container's environment, into the read command line."""
    cg = parsed.doc.setdefault("cgplan", {})
    release = image_release(d.image)
    if "vllm_version" not in cg and vllm_version is not None:
        cg["vllm_version"] = vllm_version
        if release is not None and vllm_version == release:
            parsed.where["cgplan.vllm_version"] = f"{PREFIX}:{d.image_where}"
    elif d.image is not None and release is None and "vllm_version" not in cg:
        parsed.notes.append(
            f"{d.image_where}: {d.image} names no vLLM release in its tag: planned with vLLM "
            f"{LATEST_VERSION}'s rules (--vllm-version to choose)"
        )
    if d.gpu is not None and "platform" not in cg:
        cg["platform"] = d.gpu
        parsed.where["cgplan.platform"] = f"{PREFIX}:{d.gpu_where}"
    runner, unmodelled, ignored = environment(d)
    if runner is not None:
        cg["model_runner"] = runner
    for where, note in unmodelled:
        if strict:
            raise _fail(where, f"{note}; --strict refuses it")
        parsed.unmodelled.append(f"{where}: {note}; planned as if it were unset (--strict refuses it)")
    parsed.ignored += [f"env {name}" for name in ignored]
    if not cg:
        del parsed.doc["cgplan"]


def read_deployed(
    d: Deployed,
    *,
    base_dir: Path,
    overrides: Overrides,
    parse: Callable[[dict[str, Any]], _T],
) -> tuple[VllmArgs, _T]:
    """A deployed container's command read as `read_vllm_args` reads a command line, then `parse`d
    (cgplan's config reader); every error located at the part of the manifest it comes from
    (`spec.template.spec.containers[0].args[3]: --max-num-seqs: ...`).

    Raises:
        ConfigError: located at the manifest's key path (the caller adds the file name).
    """
    for i, word in enumerate(d.argv):
        if word == "--config" or word.startswith("--config="):
            raise ConfigError(
                d.where[i],
                "--config FILE: a file inside the container, which cgplan cannot read (expected the "
                "flags in the manifest, or plan that YAML: cgplan plan FILE)",
            )
    try:
        parsed = read_vllm_args(
            d.argv,
            model_config=overrides.model_config,
            base_dir=base_dir,
            vllm_version=overrides.vllm_version,
            strict=overrides.strict,
            deployed=d,
        )
        try:
            result = parse(parsed.doc)
        except ConfigError as e:
            raise parsed.locate(e) from None
    except ConfigError as e:
        raise _at_deployed(e, d) from None
    return parsed, result


def _at_deployed(err: ConfigError, d: Deployed) -> ConfigError:
    """`err` (located at a flag: `--vllm-args:--max-num-seqs`) at the manifest word it came from."""
    if not err.path.startswith(PREFIX):
        return err
    loc = err.path.removeprefix(PREFIX).removeprefix(":")
    known = {*d.where, d.image_where, d.gpu_where, *(w for _, _, w in d.env)}
    if loc in known:
        path, problem = loc, err.problem
    else:
        name = loc if loc == "MODEL" else loc.split(".")[0].split("=")[0]
        index = _word_index(d.argv, name)
        path = d.where[index] if index is not None else d.container
        problem = f"{loc}: {err.problem}" if loc else err.problem
    located = err.__class__.__new__(err.__class__)
    located.__dict__.update(err.__dict__)
    located.path, located.problem, located.source = path, problem, None
    located.message = f"{path}: {problem}" if path else problem
    located.args = (located.message,)
    return located


def _word_index(argv: list[str], name: str) -> int | None:
    """The word of `argv` an error names: the model (after `vllm serve`, or --model's value), or the
    last occurrence of a flag (the one argparse keeps)."""
    if name == "MODEL":
        for i, word in enumerate(argv):
            if word == "--model" and i + 1 < len(argv):
                return i + 1
            if word.startswith("--model="):
                return i
        return 2 if len(argv) > 2 and argv[:2] == ["vllm", "serve"] and not argv[2].startswith("-") else None
    for i in range(len(argv) - 1, -1, -1):
        word = argv[i]
        if (
            word == name
            or word.startswith((name + "=", name + "."))
            or (name == "-O" and word.startswith("-O"))
        ):
            return i
    return None


def read_config_document(
    raw: Mapping[Any, Any],
    *,
    base_dir: Path,
    vllm_version: str | None = None,
    strict: bool = False,
) -> VllmArgs:
    """A YAML config's top level read as `vllm serve --config FILE` reads it (every key a flag of
    the release, in either spelling; `cgplan:` kept as cgplan's own section), into cgplan's config
    schema. `model:` stays as written: the config reader resolves it (and cgplan.model_config).

    Errors and `where` are located at the document's own keys (`key` or `key.path`), for the caller
    to put the file name in front.

    Raises:
        ConfigError: located at the key that set the offending value.
    """
    try:
        cgplan_section = _cgplan_section(raw, "")
        notes: list[str] = []
        ix = _release_index(vllm_version, cgplan_section)
        toks = _file_tokens(raw, "", ix, notes)
        _, values, history = _parse(_dotted_pass(_dash_pass(toks)), ix)
        parsed = _build(None, values, history, None, base_dir, strict=strict, document=True)
    except ConfigError as e:
        raise _in_document(e) from None
    parsed.notes[:0] = notes
    parsed.where = {k: _unprefixed(v) for k, v in parsed.where.items()}
    parsed.document = True
    if cgplan_section:
        parsed.doc["cgplan"] = {**cgplan_section, **parsed.doc.get("cgplan", {})}
        parsed.where["cgplan"] = "cgplan"
    return parsed


def _unprefixed(path: str) -> str:
    return path.removeprefix(PREFIX).removeprefix(":")


def _in_document(err: ConfigError) -> ConfigError:
    """`err` located at the document's key (no `--vllm-args:` in front)."""
    located = err.__class__.__new__(err.__class__)
    located.__dict__.update(err.__dict__)
    located.path = _unprefixed(err.path)
    located.message = f"{located.path}: {err.problem}" if located.path else err.problem
    located.args = (located.message,)
    return located


def _build(
    model: _Tok | None,
    values: dict[str, _Val],
    history: dict[str, list[_Val]],
    model_config: Path | None,
    base_dir: Path,
    *,
    strict: bool = False,
    document: bool = False,
) -> VllmArgs:
    doc: dict[str, Any] = {}
    where: dict[str, str] = {}
    ignored: list[str] = []
    unmodelled: list[str] = []

    def put(key: str, value: Any, val: _Val) -> None:
        doc[key] = value
        where[key] = f"{PREFIX}:{val.loc}"

    for dest, vals in list(history.items()):
        flag = vals[-1].flag
        name = vals[-1].loc if document else flag.names[0]  # a document lists its keys as written
        if flag.role == READ and dest in _OPTIONAL and str(vals[-1].raw) in ("None", ""):
            del values[dest]  # vLLM's optional_type: `--key None` (a YAML null) is the default
            continue
        if flag.role == IGNORED and name not in ignored:
            ignored.append(name)
        elif flag.role == UNMODELLED:
            val = vals[-1]
            if flag.at_default(val.positive, val.raw):
                ignored.append(name)
                continue
            if strict:
                raise _fail(
                    val.loc, f"{unmodelled_problem(flag)}; --strict refuses it", _given(val), _no_op(flag)
                )
            shown = _shown_value(val)
            unmodelled.append(
                f"{val.spelled}{' ' + shown if shown else ''}: {unmodelled_problem(flag)}; "
                f"planned as if it were {_no_op(flag)} (--strict refuses it)"
            )
        elif dest in ("speculative_config", "compilation_config", "attention_config"):
            last = vals[-1]
            ignored += [
                f"{v.spelled} (replaced by the later {last.spelled}, as vLLM does)" for v in vals[:-1]
            ]

    if not document or "hf_config_path" in values:
        model_path, model_where = _model(model, values, model_config, base_dir)
    elif (m := values.get("model")) is not None:  # the config reader resolves it (cgplan.model_config)
        model_path, model_where = m.raw, f"{PREFIX}:{m.loc}"
    else:
        raise ConfigError("model", "missing (expected a local folder with a Hugging Face config.json)")
    doc["model"] = model_path
    where["model"] = model_where

    if (v := values.get("max_model_len")) is not None:
        text = str(v.raw).strip()
        if text != "-1" and text.lower() != "auto":  # auto-fit: sized after capture is planned
            put("max_model_len", _int(v, human=True), v)
    for key, human in (
        ("max_num_seqs", False),
        ("max_num_batched_tokens", True),
        ("tensor_parallel_size", False),
    ):
        if (v := values.get(key)) is not None:
            put(key, _int(v, human=human), v)
    for key in (
        "pipeline_parallel_size",
        "data_parallel_size",
        "decode_context_parallel_size",
        "max_loras",
        "ubatch_size",
        "dbo_decode_token_threshold",
        "dbo_prefill_token_threshold",
    ):
        if (v := values.get(key)) is not None:
            put(key, _int(v), v)
    if (v := values.get("all2all_backend")) is not None:
        put("all2all_backend", v.raw, v)
    for key in (
        "enable_expert_parallel",
        "enable_lora",
        "specialize_active_lora",
        "enable_dbo",
        "async_scheduling",
    ):
        if (v := values.get(key)) is not None:
            put(key, v.positive, v)
    if (v := values.get("enforce_eager")) is not None:
        put("enforce_eager", v.positive, v)
    if (v := values.get("performance_mode")) is not None:
        put("performance_mode", v.raw, v)
    if (v := values.get("runner")) is not None:
        put("runner", v.raw, v)
    for key in ("kv_cache_dtype", "dtype", "quantization"):
        if (v := values.get(key)) is not None:
            put(key, v.raw, v)
    if (v := values.get("kv_transfer_config")) is not None:
        kt = _json_object(
            v, human=False, example='{"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}'
        )
        if kt is not None:
            put("kv_transfer_config", kt, v)
    if (v := values.get("optimization_level")) is not None:
        level = str(v.raw).strip()
        if level not in ("0", "1", "2", "3"):
            hint = "; -O.key=value is not a vLLM form: use -cc.key=value" if level.startswith(".") else ""
            raise _fail(v.loc, f"out of range{hint}", v.raw, "0, 1, 2 or 3")
        put("optimization_level", int(level), v)

    _speculative(values, put, where)
    _compilation(values, put, where)
    backend = _attention(values, where)
    if backend is not None:
        doc["cgplan"] = {"attention_backend": backend}
    return VllmArgs(doc, ignored, where, unmodelled, given=frozenset(values))


_OPTIONAL = frozenset(
    (
        "hf_config_path",
        "max_num_seqs",
        "max_num_batched_tokens",
        "speculative_config",
        "spec_method",
        "spec_model",
        "spec_tokens",
        "cudagraph_capture_sizes",
        "max_cudagraph_capture_size",
        "attention_backend",
    )
)
"""Read flags of `X | None` EngineArgs fields (vllm/engine/arg_utils.py): their `optional_type`
reads `None` (and an empty value) as the default."""


def _given(val: _Val) -> object:
    """The value given, for `got ...`: the text, or the flag as written for a boolean."""
    if val.raw is None:
        return val.loc if val.positive else f"{val.loc} (false)"
    return val.raw


def _shown_value(val: _Val) -> str:
    if val.raw is None:
        return "" if val.positive else "(false)"
    text = " ".join(val.raw) if isinstance(val.raw, list) else str(val.raw)
    return text if len(text) <= 60 else text[:57] + "..."


def _no_op(flag: ServeFlag) -> str:
    """What the plan assumes for an unmodelled flag: vLLM's default, in words."""
    if flag.default is None:
        return "left out (vLLM's default)"
    if flag.arity in ("bool", "none"):
        return f"{flag.default.lower()} (vLLM's default)"
    return f"{flag.default or repr('')} (vLLM's default)"


def _speculative(values: dict[str, _Val], put: _Put, where: dict[str, str]) -> None:
    sc: dict[str, Any] | None = None
    if (v := values.get("speculative_config")) is not None:
        sc = _json_object(v, human=False, example='{"method": "eagle", "num_speculative_tokens": 3}')
        if sc is not None:
            sc = {k.replace("-", "_"): x for k, x in sc.items()}  # create_speculative_config does this
            put("speculative_config", sc, v)
    for dest, key in (
        ("spec_method", "method"),
        ("spec_model", "model"),
        ("spec_tokens", "num_speculative_tokens"),
    ):
        if (v := values.get(dest)) is None:
            continue
        if sc is None:  # filled by flags of its own: errors about other keys point at the JSON flag
            sc = {}
            put("speculative_config", sc, v)
            where["speculative_config"] = f"{PREFIX}:--speculative-config"
        if key in sc:
            raise _fail(
                v.loc,
                f"mutually exclusive with the speculative config's '{key}' (vLLM refuses both)",
                v.raw,
                f"one of {v.flag.names[0]} and --speculative-config.{key}",
            )
        sc[key] = _int(v) if dest == "spec_tokens" else v.raw
        where[f"speculative_config.{key}"] = f"{PREFIX}:{v.loc}"


def _compilation(values: dict[str, _Val], put: _Put, where: dict[str, str]) -> None:
    cc: dict[str, Any] | None = None
    if (v := values.get("compilation_config")) is not None:
        cc = _json_object(v, human=True, example='{"cudagraph_mode": "FULL_AND_PIECEWISE"}')
        if cc is not None:
            put("compilation_config", cc, v)
    for dest in ("cudagraph_capture_sizes", "max_cudagraph_capture_size"):
        if (v := values.get(dest)) is None:
            continue
        if cc is None:  # filled by flags of its own: errors about other keys point at the JSON flag
            cc = {}
            put("compilation_config", cc, v)
            where["compilation_config"] = f"{PREFIX}:--compilation-config"
        if cc.get(dest) is not None:
            raise _fail(
                v.loc,
                f"mutually exclusive with the compilation config's '{dest}' (vLLM refuses both)",
                v.raw,
                f"one of {v.flag.names[0]} and --compilation-config.{dest}",
            )
        if dest == "cudagraph_capture_sizes":
            bad = [item for item in v.raw if not _is_int(item)]
            if bad:
                raise _fail(v.loc, "must be integers", bad[0], "sizes such as 1 2 4 8")
            cc[dest] = [int(item) for item in v.raw]
        else:
            cc[dest] = _int(v)
        where[f"compilation_config.{dest}"] = f"{PREFIX}:{v.loc}"


def _attention(values: dict[str, _Val], where: dict[str, str]) -> str | None:
    backend: str | None = None
    if (v := values.get("attention_config")) is not None:
        ac = _json_object(v, human=True, example='{"backend": "FLASH_ATTN"}') or {}
        for key in ac:
            if key != "backend":
                raise _fail(
                    f"{v.loc}.{key}",
                    _UNMODELLED_PROBLEM,
                    ac[key],
                    "only backend in --attention-config",
                )
        if ac.get("backend") is not None:
            backend = str(ac["backend"])
            where["cgplan.attention_backend"] = f"{PREFIX}:{v.loc}.backend"
    if (v := values.get("attention_backend")) is not None:
        if backend is not None:
            raise _fail(
                v.loc,
                "mutually exclusive with the attention config's 'backend' (vLLM refuses both)",
                v.raw,
                "one of --attention-backend and --attention-config.backend",
            )
        backend = str(v.raw)
        where["cgplan.attention_backend"] = f"{PREFIX}:{v.loc}"
    if backend is not None and backend.lower() == "auto":  # vLLM: "auto" means its own choice
        return None
    return backend


def parse_vllm_args(
    argv: list[str], *, model_config: Path | None, base_dir: Path
) -> tuple[dict[str, Any], list[str]]:
    """A `vllm serve` command line → (config document in cgplan's YAML schema, ignored flags).

    `base_dir` is where relative paths (MODEL, --config FILE) start, as for vLLM: the working directory.

    Raises:
        ConfigError: located as `--vllm-args:<flag>: problem (got X; expected Y)`.
    """
    parsed = read_vllm_args(argv, model_config=model_config, base_dir=base_dir)
    return parsed.doc, parsed.ignored
