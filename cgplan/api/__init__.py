"""The library: one module per command, files or paths in, typed results out.

The CLI (`cgplan/cli/<cmd>.py`) parses options, makes one call here, renders the result and
maps it to an exit code; scripts and tests call the same functions.

| command   | call                                                          | result                 |
|-----------|---------------------------------------------------------------|------------------------|
| plan      | `api.plan.plan(config, argv, overrides, policy=, ...)`        | `PlanResult`           |
| capture   | `api.capture.run_capture(config, overrides, backend=, ...)`   | `CaptureOutcome`       |
|           | `api.fleet.run_local(...)` / `api.fleet_ray.run_ray(...)`     | `FleetRun`             |
| diff      | `api.diff.diff_paths(a, b, versions, policies=, ...)`         | `Diff`                 |
| sweep     | `api.sweep.sweep_config(config, sets, versions, policy, ...)` | `SweepResult`          |
| gate      | `api.gate.gate_targets(targets, policy, baseline, ...)`       | `(GateResults, policy)`|
| logs      | `api.logs.check_log(log, config, vllm_version, ...)`          | `LogCheck`             |
| optimize  | `api.optimize.optimize_config(config, traffic, overrides)`    | `Optimized`            |
| calibrate | `api.calibrate.calibrate(fit_reports, test_reports, ...)`     | `Calibration`          |
| env       | `api.env.environment()`                                       | `EnvProbe`             |

`api.plan.plan_file` / `plan_vllm_args` are plan's halves for callers that hold the coefficient,
latency and traffic objects already (diff, gate, sweep, capture and logs plan through them).

Nothing is imported here: `import cgplan.api` costs nothing, and each command imports only its
own module (start-up is most of a `--json` run's time).
"""
