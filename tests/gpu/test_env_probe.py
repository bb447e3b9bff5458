"""`cgplan env`'s typed probe: the JSON keeps its shape (keys present only for what imports)."""

from __future__ import annotations

from cgplan.core.model.env import EnvProbe, GpuInfo
from cgplan.io.schema.env import env_to_dict
from cgplan.render.env import env_text


def _probe(**kw: object) -> EnvProbe:
    base: dict[str, object] = {
        "cgplan": "0.1.0",
        "python": "3.11.9",
        "vllm_rules": ("0.32.0", "0.33.0"),
        "torch": None,
        "cuda": None,
        "vllm": None,
        "driver": None,
        "gpus": (),
        "missing": (("torch", "not installed"), ("vllm", "not installed")),
    }
    base.update(kw)
    return EnvProbe(**base)  # type: ignore[arg-type]


def test_without_torch_the_document_has_no_torch_or_cuda_key() -> None:
    doc = env_to_dict(_probe())
    assert "torch" not in doc and "cuda" not in doc and "vllm" not in doc
    assert doc["missing"] == {"torch": "not installed", "vllm": "not installed"}
    text = env_text(_probe())
    assert "torch: not installed (CUDA -)" in text
    assert text.endswith("can plan: yes · can capture: no\n")


def test_a_cpu_build_of_torch_keeps_cuda_null_and_a_gpu_line() -> None:
    gpu = GpuInfo(0, "NVIDIA H200", (9, 0), 150 << 30)
    e = _probe(torch="2.9.0", cuda=None, vllm="0.33.0", driver="570.1", gpus=(gpu,), missing=())
    doc = env_to_dict(e)
    assert doc["torch"] == "2.9.0" and "cuda" in doc and doc["cuda"] is None
    assert doc["vllm"] == "0.33.0"
    assert doc["gpus"] == [
        {"index": 0, "name": "NVIDIA H200", "capability": [9, 0], "total_memory_bytes": 150 << 30}
    ]
    text = env_text(e)
    assert "GPU 0: NVIDIA H200 (sm90, 150 GiB)" in text
    assert text.endswith("can capture: yes\n")
