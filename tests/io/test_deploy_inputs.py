"""#28: inputs as deployed: a Kubernetes manifest (one workload, or a Helm-rendered stream), a list
of a container's args, a `docker run ... vllm/vllm-openai ...` line. Each plans as the command line
its vLLM container runs, and each error points at the part of the input it comes from."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from cgplan.api.plan import plan_file, plan_vllm_args
from cgplan.core.plan.fingerprint import fingerprint
from cgplan.errors import ConfigError
from cgplan.io.config import Overrides
from tests.cli_helpers import run
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
MODEL = "configs/models/tiny-llama"
EXAMPLE = ROOT / "configs" / "examples" / "pr50488-eagle-k16.yaml"
MANIFEST = ROOT / "configs" / "deploy" / "pr50488-eagle-k16.deployment.yaml"
EAGLE16 = '{"method": "eagle", "num_speculative_tokens": 16}'
ARGS = [MODEL, "--max-num-seqs", "32", "--max-num-batched-tokens", "8192", "--speculative-config", EAGLE16]


def plan_doc(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> dict[str, Any]:
    code, out, err = run(monkeypatch, capsys, "plan", "--json", *args)
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    for key in ("source", "ignored_keys", "fingerprint"):
        doc.pop(key, None)
    for fix in doc["fixes"]:
        fix.pop("config_lines", None)
    return doc


def test_the_readme_example_as_a_manifest_plans_as_its_yaml(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The done-when case: a Helm-rendered Service + Deployment of the README's example (its image
    tag names the release, its node selector the GPU) plans the same as the example YAML."""
    monkeypatch.chdir(ROOT)
    assert plan_doc(monkeypatch, capsys, str(MANIFEST)) == plan_doc(monkeypatch, capsys, str(EXAMPLE))
    loaded, _ = plan_file(MANIFEST)
    assert loaded.ignored_keys == ("--port", "env MAX_NUM_SEQS", "env HF_TOKEN")


def _container(**fields: Any) -> dict[str, Any]:
    return {"name": "vllm", "image": "vllm/vllm-openai:v0.33.0", **fields}


def _workload(kind: str, container: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [{"name": "sidecar", "image": "busybox"}, container]}
    bodies: dict[str, dict[str, Any]] = {
        "Pod": {"spec": pod},
        "Deployment": {"spec": {"template": {"spec": pod}}},
        "StatefulSet": {"spec": {"template": {"spec": pod}}},
        "Job": {"spec": {"template": {"spec": pod}}},
        "CronJob": {"spec": {"jobTemplate": {"spec": {"template": {"spec": pod}}}}},
    }
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}, **bodies[kind]}


def _write(tmp_path: Path, doc: object, name: str = "m.yaml") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))  # JSON is YAML: what kubectl get -o json writes
    return path


@pytest.mark.parametrize("kind", ["Pod", "Deployment", "StatefulSet", "Job", "CronJob"])
def test_every_workload_kind(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    expected, _ = plan_vllm_args(["serve", *ARGS], base_dir=ROOT)
    loaded, _ = plan_file(_write(tmp_path, _workload(kind, _container(args=ARGS))))
    assert fingerprint(loaded.input) == fingerprint(expected.input)


@pytest.mark.parametrize(
    "container",
    [
        _container(command=["vllm", "serve"], args=ARGS),
        _container(command=["vllm", "serve", *ARGS]),
        _container(
            image="my/own:1",
            command=["python3", "-m", "vllm.entrypoints.openai.api_server"],
            args=["--model", *ARGS],
        ),
        _container(command=["/bin/sh", "-c", "pip install x && exec vllm serve " + shlex.join(ARGS)]),
        _container(args=["$(M)", *ARGS[1:]], env=[{"name": "M", "value": MODEL}]),
    ],
    ids=["command-and-args", "command", "api-server", "shell", "env-expansion"],
)
def test_command_forms(container: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    expected, _ = plan_vllm_args(["serve", *ARGS], base_dir=ROOT)
    loaded, _ = plan_file(_write(tmp_path, _workload("Deployment", container)))
    assert fingerprint(loaded.input) == fingerprint(expected.input)


def test_an_args_list_and_a_list_of_objects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    expected, _ = plan_vllm_args(["serve", *ARGS], base_dir=ROOT)
    loaded, _ = plan_file(_write(tmp_path, ARGS))
    assert fingerprint(loaded.input) == fingerprint(expected.input)
    listed = {"apiVersion": "v1", "kind": "List", "items": [_workload("Deployment", _container(args=ARGS))]}
    assert fingerprint(plan_file(_write(tmp_path, listed))[0].input) == fingerprint(expected.input)


def test_image_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    env = [
        {"name": "VLLM_USE_V2_MODEL_RUNNER", "value": "0"},
        {"name": "VLLM_ATTENTION_BACKEND", "value": "FLASHINFER"},
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "t"}}},
    ]
    path = _write(
        tmp_path, _workload("Pod", _container(image="vllm/vllm-openai:v0.30.0", args=ARGS, env=env))
    )
    loaded, _ = plan_file(path)
    assert loaded.input.vllm_version == "0.30.0"
    assert loaded.input.model_runner == "v1"
    assert loaded.unmodelled == (
        "spec.containers[1].env[1]: environment VLLM_ATTENTION_BACKEND=FLASHINFER: can change what vLLM "
        "captures, which cgplan does not model; planned as if it were unset (--strict refuses it)",
    )
    assert "env HF_TOKEN" in loaded.ignored_keys
    with pytest.raises(ConfigError, match=r"m\.yaml:spec\.containers\[1\]\.env\[1\]: environment VLLM_ATT"):
        plan_file(path, Overrides(strict=True))
    # --vllm-version wins over the tag; a tag naming no release is said
    assert plan_file(path, Overrides(vllm_version="0.33.0"))[0].input.vllm_version == "0.33.0"
    latest = _write(tmp_path, _workload("Pod", _container(image="vllm/vllm-openai:latest", args=ARGS)))
    assert (
        plan_file(latest)[0]
        .notes[0]
        .startswith("spec.containers[1].image: vllm/vllm-openai:latest names no vLLM release in its tag")
    )


def _refused(tmp_path: Path, doc: object, name: str = "m.yaml") -> str:
    with pytest.raises(ConfigError) as info:
        plan_file(_write(tmp_path, doc, name))
    assert "\n" not in info.value.message
    return info.value.message


@pytest.mark.parametrize(
    ("container", "message"),
    [
        (
            _container(args=[MODEL, "--max-num-seqs", "0"]),
            "m.yaml:spec.containers[1].args[1]: --max-num-seqs: out of range (got 0;",
        ),
        (
            _container(args=[MODEL, "--max-num-seq", "4"]),
            "m.yaml:spec.containers[1].args[1]: --max-num-seq: unknown flag; did you mean '--max-num-seqs'?",
        ),
        (
            _container(args=["meta-llama/Llama-3.1-8B"]),
            "m.yaml:spec.containers[1].args[0]: MODEL: not a local folder; a hub model needs --model-config",
        ),
        (
            _container(image="vllm/vllm-openai:v0.20.0", args=[MODEL]),
            "m.yaml:spec.containers[1].image: no rules for vLLM 0.20.0; did you mean '0.26.0'?",
        ),
        (
            _container(args=["serve", MODEL]),
            "m.yaml:spec.containers[1].args[0]: 'serve' again: the image's entrypoint is already "
            "`vllm serve`",
        ),
        (
            _container(args=[MODEL, "--config", "/etc/vllm/c.yaml"]),
            "m.yaml:spec.containers[1].args[1]: --config FILE: a file inside the container",
        ),
        (
            _container(args=[MODEL], env=[{"name": "VLLM_USE_V2_MODEL_RUNNER", "value": "true"}]),
            "m.yaml:spec.containers[1].env[0]: VLLM_USE_V2_MODEL_RUNNER='true': vLLM reads it as "
            "bool(int(value))",
        ),
        (
            _container(image="my/own:1", args=["vllm", "serve", MODEL]),
            "m.yaml:spec.containers[1].command: missing, and the image's entrypoint is not vLLM's",
        ),
        (
            _container(args="--max-num-seqs 4"),
            "m.yaml:spec.containers[1].args: must be a list of strings",
        ),
    ],
)
def test_errors_point_into_the_manifest(
    container: dict[str, Any], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    got = _refused(tmp_path, _workload("Pod", container))
    assert got.startswith(str(tmp_path / message.split(":", 1)[0]) + ":" + message.split(":", 1)[1]), got


def test_manifests_with_no_or_several_vllm_containers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    none = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {}}
    assert _refused(tmp_path, none).endswith(
        "m.yaml: a Kubernetes manifest with no workload with containers (expected a container with image "
        "vllm/vllm-openai:TAG, or whose command runs vllm serve)"
    )
    two = _workload("Pod", _container(args=ARGS))
    two["spec"]["containers"].append(_container(name="second", args=ARGS))
    assert "2 vLLM containers: spec.containers[1] (vllm), spec.containers[2] (second)" in _refused(
        tmp_path, two
    )
    # a stream of documents that are not manifests: vLLM's yaml.safe_load refuses it
    stream = tmp_path / "s.yaml"
    stream.write_text(f"model: {MODEL}\n---\nmax_num_seqs: 4\n")
    with pytest.raises(ConfigError, match=r"s\.yaml: invalid YAML: .*another document"):
        plan_file(stream)


def test_docker_run_lines(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    line = [
        "docker", "run", "--runtime", "nvidia", "--gpus", "all", "-v", "/models:/models", "-p", "8000:8000",
        "--ipc=host", "-it", "--rm", "-e", "HF_TOKEN", "vllm/vllm-openai:v0.33.0", *ARGS,
    ]  # fmt: skip
    plain = plan_doc(monkeypatch, capsys, "--vllm-version", "0.33.0", "--", "serve", *ARGS)
    assert plan_doc(monkeypatch, capsys, "--", *line) == plain
    assert plan_doc(monkeypatch, capsys, "--vllm-args", shlex.join(line)) == plain
    loaded, _ = plan_vllm_args(
        ["docker", "run", "-e", "VLLM_USE_V2_MODEL_RUNNER=0", "vllm/vllm-openai:v0.31.0", *ARGS],
        base_dir=ROOT,
    )
    assert (loaded.input.vllm_version, loaded.input.model_runner) == ("0.31.0", "v1")
    for bad, message in (
        (["docker", "run", "--weird", "vllm/vllm-openai", MODEL], "unknown docker run option --weird"),
        (["docker", "run", "vllm/vllm-openai", "serve", MODEL], "'serve' again"),
        (["docker", "run", "busybox", MODEL], "the image's entrypoint is not known (busybox)"),
        (["docker", "run", "vllm/vllm-openai", MODEL, "--max-num-seqs", "0"], "--max-num-seqs: out of range"),
    ):
        with pytest.raises(ConfigError) as info:
            plan_vllm_args(bad, base_dir=ROOT)
        assert info.value.message.startswith("--vllm-args:") and message in info.value.message, info.value
