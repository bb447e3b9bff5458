"""The `vllm serve` command of a deployment: a Kubernetes manifest's vLLM container (a Deployment,
StatefulSet, Pod, Job, ... or a Helm-rendered stream of them) or a `docker run ... vllm/vllm-openai
...` line, as the command line, environment and image the container runs (issue 28).

What runs is what the container runtime runs: Kubernetes' `command` replaces the image's
ENTRYPOINT and `args` its CMD, `$(VAR)` in either is the container's `env` value (an unknown one
stays as written, as Kubernetes leaves it); `docker run IMAGE ARGS` appends ARGS to the ENTRYPOINT
(`--entrypoint` replaces it). vLLM's images (`vllm/vllm-openai`) have `ENTRYPOINT ["vllm", "serve"]`
(vLLM's docker/Dockerfile), so their args start with the model or a flag; `serve` again is refused,
as vLLM's argparse refuses `vllm serve serve`. A `sh -c "..."` command is split as the shell
would and the `vllm serve` (or `python -m vllm.entrypoints.openai.api_server`) in it is taken.

The image's tag names the release (`v0.33.0`); the environment's `VLLM_USE_V2_MODEL_RUNNER` picks
the model runner, and every other `VLLM_*`, `TORCH*` or `PYTORCH_*` variable is named as not
modelled. Each token keeps where it came from (`spec.template.spec.containers[0].args[3]`), so an
error points at the part of the manifest it comes from.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cgplan.errors import ConfigError

API_SERVER = "vllm.entrypoints.openai.api_server"
VLLM_ENTRYPOINT = ("vllm", "serve")
"""The ENTRYPOINT of vLLM's own images (docker/Dockerfile: `ENTRYPOINT ["vllm", "serve"]`)."""
_VLLM_IMAGE = re.compile(r"(^|/)vllm-openai(-[a-z0-9]+)?(:|@|$)|(^|/)vllm/vllm", re.IGNORECASE)
_POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "PodTemplate": ("template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
"""Where each workload kind keeps its pod spec (the Kubernetes API)."""
_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)|\$\$")
_SHELLS = ("sh", "bash", "dash", "ash", "zsh")
_RELEASE_TAG = re.compile(r"v?(\d+\.\d+(?:\.\d+)?)")

DOCKER_VALUE_OPTIONS = frozenset(
    [
        "-a",
        "--attach",
        "--add-host",
        "--annotation",
        "--blkio-weight",
        "--blkio-weight-device",
        "--cap-add",
        "--cap-drop",
        "--cgroup-parent",
        "--cgroupns",
        "--cidfile",
        "--cpu-period",
        "--cpu-quota",
        "--cpu-rt-period",
        "--cpu-rt-runtime",
        "-c",
        "--cpu-shares",
        "--cpus",
        "--cpuset-cpus",
        "--cpuset-mems",
        "--detach-keys",
        "--device",
        "--device-cgroup-rule",
        "--device-read-bps",
        "--device-read-iops",
        "--device-write-bps",
        "--device-write-iops",
        "--dns",
        "--dns-option",
        "--dns-search",
        "--domainname",
        "--entrypoint",
        "-e",
        "--env",
        "--env-file",
        "--expose",
        "--gpus",
        "--group-add",
        "--health-cmd",
        "--health-interval",
        "--health-retries",
        "--health-start-interval",
        "--health-start-period",
        "--health-timeout",
        "-h",
        "--hostname",
        "--ip",
        "--ip6",
        "--ipc",
        "--isolation",
        "--kernel-memory",
        "-l",
        "--label",
        "--label-file",
        "--link",
        "--link-local-ip",
        "--log-driver",
        "--log-opt",
        "--mac-address",
        "-m",
        "--memory",
        "--memory-reservation",
        "--memory-swap",
        "--memory-swappiness",
        "--mount",
        "--name",
        "--network",
        "--net",
        "--network-alias",
        "--net-alias",
        "--oom-score-adj",
        "--pid",
        "--pids-limit",
        "--platform",
        "-p",
        "--publish",
        "--pull",
        "--restart",
        "--runtime",
        "--security-opt",
        "--shm-size",
        "--stop-signal",
        "--stop-timeout",
        "--storage-opt",
        "--sysctl",
        "--tmpfs",
        "--ulimit",
        "-u",
        "--user",
        "--userns",
        "--uts",
        "-v",
        "--volume",
        "--volume-driver",
        "--volumes-from",
        "-w",
        "--workdir",
    ]
)
"""`docker run` options that take a value (docker's reference; podman's are a superset of the
common ones): the image is the first word that is neither an option nor such a value."""
DOCKER_FLAG_OPTIONS = frozenset(
    [
        "-d",
        "--detach",
        "--disable-content-trust",
        "--init",
        "-i",
        "--interactive",
        "--no-healthcheck",
        "--oom-kill-disable",
        "--privileged",
        "-P",
        "--publish-all",
        "-q",
        "--quiet",
        "--read-only",
        "--rm",
        "--sig-proxy",
        "-t",
        "--tty",
        "--help",
    ]
)


@dataclass
class Deployed:
    """A container's `vllm serve` command: the words, where each came from, its env and image."""

    argv: list[str]
    where: list[str]
    """Per word of `argv`: its place in the input (a manifest key path, or a docker-run word)."""
    image: str | None = None
    image_where: str = ""
    env: list[tuple[str, str | None, str]] = field(default_factory=list)
    """(name, value or None when it comes from a secret or ConfigMap, where)."""
    container: str = ""
    """Where the container is (a manifest key path), for errors about it as a whole."""
    gpu: str | None = None
    """The GPU the pod is scheduled on, as its node selector names it (GPU feature discovery's
    `nvidia.com/gpu.product` label: nvidia-smi's name with dashes)."""
    gpu_where: str = ""


def _fail(path: str, problem: str, expected: str | None = None) -> ConfigError:
    return ConfigError(path, problem + (f" (expected {expected})" if expected else ""))


def is_manifest(doc: object) -> bool:
    """A Kubernetes object: a mapping with `apiVersion` and `kind`."""
    return isinstance(doc, Mapping) and "apiVersion" in doc and "kind" in doc


def _get(node: object, keys: Sequence[str]) -> object:
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _containers(docs: Sequence[Any]) -> list[tuple[str, Mapping[str, Any], Mapping[str, Any]]]:
    """Every (key path, container, pod spec) of the workloads in `docs` (a `List`'s items too)."""
    out = []
    many = len(docs) > 1
    stack = [(f"[{i}]" if many else "", d) for i, d in enumerate(docs)]
    while stack:
        prefix, doc = stack.pop(0)
        if not is_manifest(doc):
            continue
        kind = doc.get("kind")
        if kind == "List" or (isinstance(kind, str) and kind.endswith("List")):
            items = doc.get("items")
            if isinstance(items, list):
                stack += [(f"{prefix}.items[{j}]".lstrip("."), item) for j, item in enumerate(items)]
            continue
        path = _POD_SPEC_PATHS.get(kind) if isinstance(kind, str) else None
        if path is None:
            continue
        spec = _get(doc, path)
        if not isinstance(spec, Mapping) or not isinstance(spec.get("containers"), list):
            continue
        base = ".".join(filter(None, [prefix, *path]))
        for j, c in enumerate(spec["containers"]):
            if isinstance(c, Mapping):
                out.append((f"{base}.containers[{j}]", c, spec))
    return out


def _words(value: object, path: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(w, str | int | float) for w in value):
        raise _fail(path, "must be a list of strings", "command: [...] / args: [...]")
    return [str(w) for w in value]


def _runs_vllm(container: Mapping[str, Any]) -> bool:
    image = container.get("image")
    if isinstance(image, str) and _VLLM_IMAGE.search(image):
        return True
    words = " ".join(str(w) for key in ("command", "args") for w in (container.get(key) or []))
    return bool(re.search(r"(^|[\s/])vllm\s+serve\b|" + re.escape(API_SERVER), words))


def _env(container: Mapping[str, Any], path: str) -> list[tuple[str, str | None, str]]:
    env = container.get("env")
    out: list[tuple[str, str | None, str]] = []
    if env is None:
        return out
    if not isinstance(env, list):
        raise _fail(f"{path}.env", "must be a list of name/value entries")
    for i, entry in enumerate(env):
        where = f"{path}.env[{i}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise _fail(where, "must be a mapping with a name", "name: VAR, value: ...")
        value = entry.get("value")
        out.append(
            (entry["name"], None if "valueFrom" in entry else ("" if value is None else str(value)), where)
        )
    return out


def _expand(word: str, env: Mapping[str, str | None]) -> str:
    """Kubernetes' `$(VAR)` expansion of command and args (`$$` is a literal `$`; an unknown
    variable stays as written)."""

    def one(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        value = env.get(m.group(1))
        return m.group(0) if value is None else value

    return _VAR.sub(one, word)


def _from_shell(words: list[str], where: list[str]) -> tuple[list[str], list[str]] | None:
    """`sh -c "... vllm serve ..."`: the vllm command inside the script, each word at the script."""
    prog = words[0].rsplit("/", 1)[-1] if words else ""
    if prog not in _SHELLS or "-c" not in words[1:3]:
        return None
    at = words.index("-c") + 1
    if at >= len(words):
        return None
    try:
        script = shlex.split(words[at], comments=True)
    except ValueError as e:
        raise _fail(where[at], f"cannot split the shell command: {e}") from None
    segment: list[str] = []
    for word in [*script, ";"]:
        if word in (";", "&&", "||", "|", "&"):
            if _vllm_start(segment) is not None:
                break
            segment = []
        else:
            segment.append(word)
    start = _vllm_start(segment)
    if start is None:
        return None
    cmd = segment[start:]
    return cmd, [where[at]] * len(cmd)


def _vllm_start(words: list[str]) -> int | None:
    """Where `vllm serve` or `python -m ...api_server` starts in a shell segment (after `exec`,
    `env`, VAR=value assignments)."""
    for i, word in enumerate(words):
        prog = word.rsplit("/", 1)[-1]
        if prog == "vllm":
            return i
        if prog.startswith("python") and words[i + 1 : i + 3] == ["-m", API_SERVER]:
            return i
        if word in ("exec", "env") or ("=" in word and not word.startswith("-")):
            continue
        return None
    return None


def manifest_command(docs: Sequence[Any]) -> Deployed:
    """The vLLM container of a manifest (one document or a Helm-rendered stream of them).

    Raises:
        ConfigError: located at the manifest's key path (the caller adds the file name).
    """
    found = _containers(docs)
    vllm = [(p, c, spec) for p, c, spec in found if _runs_vllm(c)]
    if not vllm:
        what = f"{len(found)} container(s), none runs vLLM" if found else "no workload with containers"
        raise _fail(
            "",
            f"a Kubernetes manifest with {what}",
            "a container with image vllm/vllm-openai:TAG, or whose command runs vllm serve",
        )
    if len(vllm) > 1:
        names = ", ".join(f"{p} ({c.get('name', '?')})" for p, c, _ in vllm)
        raise _fail("", f"{len(vllm)} vLLM containers: {names}", "one vLLM container per manifest to plan")
    path, container, pod = vllm[0]
    env = _env(container, path)
    values = {name: value for name, value, _ in env}
    command = _words(container.get("command"), f"{path}.command")
    args = _words(container.get("args"), f"{path}.args")
    image = container.get("image") if isinstance(container.get("image"), str) else None
    words = [_expand(w, values) for w in (*command, *args)]
    where = [f"{path}.command[{i}]" for i in range(len(command))] + [
        f"{path}.args[{i}]" for i in range(len(args))
    ]
    if not command:
        if image is None or not _VLLM_IMAGE.search(image):
            raise _fail(
                f"{path}.command",
                f"missing, and the image's entrypoint is not vLLM's ({image!r})",
                "command: [vllm, serve] with args, or a vllm/vllm-openai image",
            )
        words = [*VLLM_ENTRYPOINT, *words]
        where = [f"{path}.image"] * 2 + where
    shell = _from_shell(words, where)
    if shell is not None:
        words, where = shell
    deployed = Deployed(words, where, image, f"{path}.image", env, path)
    product = _get(pod, ("nodeSelector", "nvidia.com/gpu.product"))
    if isinstance(product, str) and product.strip():
        deployed.gpu = product.replace("-", " ")
        deployed.gpu_where = f"{path.rsplit('.containers[', 1)[0]}.nodeSelector.'nvidia.com/gpu.product'"
    _no_second_serve(deployed, from_image=not command)
    return deployed


def _no_second_serve(d: Deployed, *, from_image: bool) -> None:
    """`vllm serve serve ...`: the image already runs `vllm serve` (vLLM's argparse refuses it)."""
    if from_image and d.argv[2:3] in (["serve"], ["vllm"]):
        raise _fail(
            d.where[2],
            f"'{d.argv[2]}' again: the image's entrypoint is already `vllm serve` (vLLM refuses "
            "`vllm serve serve ...`)",
            "the model or a flag first",
        )


def docker_command(words: Sequence[str]) -> Deployed:
    """`docker run [OPTIONS] IMAGE [ARGS...]` (also `docker container run`, podman, nerdctl) as the
    command the container runs; each word's place is its position in the line (`docker run word 5`).

    Raises:
        ConfigError: located at `docker run`.
    """
    args = list(words)
    start = 3 if args[1:3] == ["container", "run"] else 2
    env: list[tuple[str, str | None, str]] = []
    entrypoint: list[str] | None = None
    i = start
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        opt, eq, value = args[i].partition("=")
        if opt in DOCKER_FLAG_OPTIONS or (len(opt) > 2 and opt[1] != "-" and set(opt[1:]) <= set("dit")):
            i += 1  # -it, -d, --rm ...
            continue
        if opt not in DOCKER_VALUE_OPTIONS:
            raise _fail(
                "docker run",
                f"unknown docker run option {opt} (cgplan cannot tell whether it takes a value)",
                f"{opt}=VALUE, or a docker run option",
            )
        if not eq:
            if i + 1 >= len(args):
                raise _fail("docker run", f"{opt} expects a value")
            value = args[i + 1]
            i += 1
        if opt in ("-e", "--env"):
            name, has, val = value.partition("=")
            env.append((name, val if has else None, f"docker run {opt} {name}"))
        elif opt == "--entrypoint":
            entrypoint = shlex.split(value) if value else []
        elif opt == "--env-file":
            env.append((f"(--env-file {value})", None, "docker run --env-file"))
        i += 1
    if i >= len(args):
        raise _fail("docker run", "no image", "docker run [OPTIONS] vllm/vllm-openai:TAG [ARGS...]")
    image = args[i]
    rest = args[i + 1 :]
    if entrypoint is None:
        if not _VLLM_IMAGE.search(image):
            raise _fail(
                "docker run",
                f"the image's entrypoint is not known ({image})",
                "a vllm/vllm-openai image, or --entrypoint vllm with serve MODEL ...",
            )
        entrypoint = list(VLLM_ENTRYPOINT)
    argv = [*entrypoint, *rest]
    where = ["docker run --entrypoint"] * len(entrypoint) + [f"docker run {image}"] * len(rest)
    d = Deployed(argv, where, image, "docker run IMAGE", env, "docker run")
    shell = _from_shell(argv, where)
    if shell is not None:
        d.argv, d.where = shell
    _no_second_serve(d, from_image=len(entrypoint) == 2 and entrypoint == list(VLLM_ENTRYPOINT))
    return d


def image_release(image: str | None) -> str | None:
    """The release an image's tag names (`vllm/vllm-openai:v0.33.0` → `0.33.0`), else None."""
    if not image or "@" in image:
        return None
    name, _, tag = image.rpartition(":")
    if not name or "/" in tag:
        return None
    m = _RELEASE_TAG.fullmatch(tag)
    return m.group(1) if m else None


def environment(d: Deployed) -> tuple[str | None, list[tuple[str, str]], list[str]]:
    """(the model runner VLLM_USE_V2_MODEL_RUNNER picks, (where, note) per variable cgplan does not
    model, the other variables' names).

    Raises:
        ConfigError: a VLLM_USE_V2_MODEL_RUNNER value vLLM's `bool(int(...))` refuses.
    """
    runner = None
    unmodelled: list[tuple[str, str]] = []
    ignored: list[str] = []
    for name, value, where in d.env:
        if name == "VLLM_USE_V2_MODEL_RUNNER":
            if value is None:
                unmodelled.append((where, f"{name} from a secret or ConfigMap: its value is not known"))
                continue
            try:
                runner = "v2" if int(value) else "v1"  # vllm/envs.py maybe_convert_bool
            except ValueError:
                raise _fail(
                    where, f"{name}={value!r}: vLLM reads it as bool(int(value)) and fails", "0 or 1"
                ) from None
        elif name.startswith(("VLLM_", "TORCH", "PYTORCH_")) or name.startswith("(--env-file"):
            shown = name if value is None else f"{name}={value}"
            unmodelled.append(
                (where, f"environment {shown}: can change what vLLM captures, which cgplan does not model")
            )
        else:
            ignored.append(name)
    return runner, unmodelled, ignored


def args_command(words: Sequence[Any]) -> Deployed:
    """A file that is a list of words: a vLLM container's args (its image's entrypoint is `vllm
    serve`), or a whole command when it starts with `vllm` or `python -m ...api_server`."""
    argv = [str(w) for w in words]
    where = [f"[{i}]" for i in range(len(argv))]
    prog = argv[0].rsplit("/", 1)[-1]
    if prog == "vllm" or (prog.startswith("python") and argv[1:3] == ["-m", API_SERVER]):
        return Deployed(argv, where, container="[0]")
    d = Deployed([*VLLM_ENTRYPOINT, *argv], ["[0]", "[0]", *where], container="[0]")
    _no_second_serve(d, from_image=True)
    return d


def is_docker_run(words: Sequence[str]) -> bool:
    """`docker run ...` (or `docker container run`, podman, nerdctl)."""
    prog = words[0].rsplit("/", 1)[-1] if words else ""
    return prog in ("docker", "podman", "nerdctl") and (
        words[1:2] == ["run"] or list(words[1:3]) == ["container", "run"]
    )
