"""Traffic histograms: scripts write JSON (configs/traffic/*.json, scripts/make_traffic.py), people
write YAML; both read to the same shapes, and each form's errors are located."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cgplan.errors import ConfigError
from cgplan.io.traffic import load_traffic
from tests.paths import ROOT_DIR

ROOT = ROOT_DIR
SHIPPED = sorted((ROOT / "configs" / "traffic").glob("*"))


def test_the_shipped_histograms_are_json_and_what_make_traffic_writes(tmp_path: Path) -> None:
    assert SHIPPED and all(p.suffix == ".json" for p in SHIPPED), SHIPPED
    subprocess.run([sys.executable, str(ROOT / "scripts/make_traffic.py"), str(tmp_path)], check=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in SHIPPED]
    for p in SHIPPED:
        assert (tmp_path / p.name).read_bytes() == p.read_bytes(), p.name


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_json_and_hand_written_yaml_read_alike(path: Path, tmp_path: Path) -> None:
    doc = json.loads(path.read_text())
    assert doc["description"].startswith("Synthetic (scripts/make_traffic.py")
    lines = [f"# {doc['description']}", "uniform_decode:"]
    lines += [f"  - {{num_reqs: {e['num_reqs']}, count: {e['count']}}}" for e in doc["uniform_decode"]]
    lines += ["mixed:"] + [
        f"  - {{num_tokens: {e['num_tokens']}, count: {e['count']}}}" for e in doc["mixed"]
    ]
    as_yaml = tmp_path / "hand.yaml"
    as_yaml.write_text("\n".join(lines) + "\n")
    a, b = load_traffic(path), load_traffic(as_yaml)
    assert (a.uniform_decode, a.mixed) == (b.uniform_decode, b.mixed)
    assert a.uniform_decode or a.mixed


def test_a_json_object_without_the_json_suffix_is_json(tmp_path: Path) -> None:
    """`--traffic -` and a .txt hold no suffix: a text that is one JSON object is read as JSON
    (PyYAML would read `1e3` as a string); a YAML flow mapping that is not JSON is still YAML."""
    p = tmp_path / "t.txt"
    p.write_text('{"uniform_decode": [{"num_reqs": 4, "count": 1e3}]}')
    assert load_traffic(p).uniform_decode == ((4, 1000.0),)
    p.write_text("{uniform_decode: [{num_reqs: 4, count: 7}]}")
    assert load_traffic(p).uniform_decode == ((4, 7.0),)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("t.json", '{"uniform_decode": [', r"^t\.json: not a traffic file: not JSON \(line 1, column 21"),
        ("t.json", '{"mixed": [], "description": 3}', r"^t\.json:description: must be text \(got 3\)"),
        (
            "t.json",
            '{"mixd": []}',
            r"^t\.json:mixd: unknown key \(expected uniform_decode, mixed or description\)",
        ),
        ("t.yaml", "description: [a]\n", r"^t\.yaml:description: must be text"),
    ],
)
def test_bad_histograms_are_one_located_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    Path(name).write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_traffic(Path(name))
