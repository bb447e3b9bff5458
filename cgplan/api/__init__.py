"""The library: one module per command, files or paths in, typed results out.

The CLI (`cgplan/cli/<cmd>.py`) parses options, makes one call here, renders the result and
maps it to an exit code; scripts and tests call the same functions.

| command   | call                                                        | result              |
|-----------|-------------------------------------------------------------|---------------------|
| plan      | `api.plan.plan_file(path, overrides)` / `plan_vllm_args(argv)` | `LoadedConfig, Plan` |
| capture   | `api.capture.run_capture(path, overrides, ...)`             | `CaptureOutcome`    |
|           | `api.fleet.run_local(...)` / `api.fleet_ray.run_ray(...)`   | `FleetRun`          |
| diff      | `api.diff.diff_paths(a, b, overrides, ...)`                 | `Diff`              |
| sweep     | `api.sweep.sweep_config(path, sets, overrides, ...)`        | `SweepResult`       |
| gate      | `api.gate.gate_targets(targets, policy, overrides, ...)`    | `list[GateResult]`  |
| logs      | `api.logs.check_log(path, config, overrides)`               | `LogCheck`          |
| optimize  | `api.optimize.optimize_config(path, traffic, overrides)`    | `Optimized`         |
| calibrate | `api.calibrate.calibrate(reports, test_reports, ...)`       | `Calibration`       |

Nothing is imported here: `import cgplan.api` costs nothing, and each command imports only its
own module (start-up is most of a `--json` run's time).
"""
