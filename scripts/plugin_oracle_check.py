"""The plugin on vLLM's own objects, on the CPU (issue 34): the oracle (scripts/oracle/oracle.py)
builds a release's real VllmConfig and its real V1 `CudagraphDispatcher` or V2 `CudaGraphManager`
for a config; a stand-in runner holds them under the attribute names the runner has
(`cudagraph_dispatcher` / `cudagraph_manager`, `uniform_decode_query_len`), the plugin's start-up
check runs on it, and steps go through the counting wrapper into vLLM's real `dispatch`.

usage: /work/oracle-venvs/venv-X/bin/python scripts/plugin_oracle_check.py [v1|v2] [JSON]
       (JSON: oracle config keys over the default, e.g. '{"speculative": {"method": "ngram",
       "num_speculative_tokens": 3}}')
       (PYTHONPATH: this checkout; prints the block and the counts as JSON)

This checks the plugin's reading of real vLLM objects and of cgplan's plan against real dispatch;
the capture itself (and the memory) is the GPU run's (scripts/device/plugin_suite.sh).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "oracle"))
RUNNER = sys.argv[1] if len(sys.argv) > 1 else "v1"
CFG = {
    "model_dir": str(ROOT / "configs" / "models" / "tiny-llama-v512"),
    "max_num_seqs": 64,
    "max_model_len": 2048,
    "max_num_batched_tokens": 8192,
    "max_cudagraph_capture_size": 32,
    "model_runner": RUNNER,
    "platform": "hopper",
    **(json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}),
}


def _runner(module: str, **attrs: object) -> object:
    """A stand-in GPUModelRunner of `module` holding `attrs` (and a `_dummy_run` to pause in)."""
    cls = type("GPUModelRunner", (), {"__module__": module, "_dummy_run": lambda self, *a, **k: None})
    runner = cls()
    runner.__dict__.update(attrs)
    return runner


def main() -> None:
    import oracle

    held: dict[str, object] = {}
    orig_v1, orig_mgr = oracle.v1_dispatchers, oracle.make_manager

    def v1_dispatchers(vllm_config, mode, q, cfg):  # type: ignore[no-untyped-def]
        from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher

        disp = CudagraphDispatcher(vllm_config)
        disp.initialize_cudagraph_keys(mode, q)
        held.update(vc=vllm_config, disp=disp, q=q)
        return orig_v1(vllm_config, mode, q, cfg)

    def make_manager(cls, vllm_config, mode, q, target=False):  # type: ignore[no-untyped-def]
        mgr = orig_mgr(cls, vllm_config, mode, q, target=target)
        if target:
            held.update(vc=vllm_config, mgr=mgr, q=q)
        return mgr

    oracle.v1_dispatchers, oracle.make_manager = v1_dispatchers, make_manager
    with contextlib.redirect_stdout(io.StringIO()):
        # once first: its own prepare_env({}) would drop the runner run() sets from CFG
        oracle.setup_process()
        out = oracle.run(CFG)
    if "vc" not in held:
        raise SystemExit(
            f"oracle: no dispatcher held: {out.get('runtime_error')} {out.get('error')} "
            f"{sorted(out.get('runtime', {}))}"
        )
    if "error" in out or "runtime_error" in out:
        raise SystemExit(f"oracle: {out.get('error') or out.get('runtime_error')}")
    import vllm

    from cgplan.gpu import vllm_plugin as vp
    from cgplan.plugin import engine
    from cgplan.plugin.startup import startup_lines

    vc = held["vc"]
    if RUNNER == "v2":
        mgr = held["mgr"]
        mgr._graphs_captured = True  # what capture() sets last; dispatch answers NONE before it  # type: ignore[attr-defined]
        runner = _runner(vp.V2_RUNNER_MODULE, cudagraph_manager=mgr, vllm_config=vc)
    else:
        runner = _runner(
            vp.V1_RUNNER_MODULE,
            cudagraph_dispatcher=held["disp"],
            vllm_config=vc,
            uniform_decode_query_len=held["q"],
        )
    counter, hook, counting = engine.start_counting(runner, vc)
    lines = startup_lines(runner, vc, None, "H200", counting)
    assert hook is not None and counter is not None, counting
    hook.on()
    # steps as the runner makes them: 48 and 16 requests of decode, a 48 x 16-token prefill
    q = int(held["q"])  # type: ignore[call-overload]
    for n, reqs, tokens, uniform in ((63, 48, 48 * q, True), (63, 16, 16 * q, True), (1, 48, 768, False)):
        for _ in range(n):
            if RUNNER == "v2":
                runner.cudagraph_manager.dispatch(reqs, tokens, q if uniform else None, 0)
            else:
                runner.cudagraph_dispatcher.dispatch(
                    num_tokens=tokens,
                    has_lora=False,
                    uniform_decode=uniform,
                    num_active_loras=0,
                    valid_modes=None,
                    invalid_modes=None,
                )
    from cgplan.core.logs.plugin import counts_document

    print(
        json.dumps(
            {
                "vllm": vllm.__version__,
                "runner": RUNNER,
                "startup": lines,
                "counts": counts_document(counter.snapshot()),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
