"""What vLLM does, release by release: the only package of cgplan that knows a vLLM release number.

* `releases`: `VllmRules` per release, `SUPPORTED_VERSIONS` (the release list every other table is
  keyed by) and the one lookup rule (`release_for`, `closest_release`, `since_entry`);
* `log_formats`: the log lines vLLM prints, per release (`cgplan logs`, the capture backend);
* `serve_flags`: the `vllm serve` flags cgplan reads, ignores or refuses, per release;
* the mirror of vLLM's code: `resolve`, `ladder`, `graphs`, `attention`, `defaults`, `dynamic_sd`
  and `gpus`.

Adding a release is one entry in `releases.RELEASES` (plus a `log_formats` or `serve_flags` entry
only where vLLM changed those) and one recording run (CONTRIBUTING.md). Nothing here is imported
by this `__init__`: `cgplan plan --json` loads the release table only (start-up, issue 18).
"""
