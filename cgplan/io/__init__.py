"""Every byte cgplan reads or writes: the one hardened reader (`files`), the writer behind every
`-o` (`output`), each file format of the project (serve configs and command lines, policies,
cost/latency coefficients, traffic, reports, vLLM logs) and the JSON contract (`schema`).

Nothing outside this package imports yaml or opens a file a user gives cgplan; the planning core
(`cgplan.core`) sees only the frozen values these modules build. (The capture fleet,
`api/fleet.py` and `api/fleet_ray.py`, still writes and tails its own child processes' logs.)
"""
