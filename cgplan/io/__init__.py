"""Every byte cgplan reads or writes: the one hardened reader (`files`), the writer behind every
`-o` (`output`), each file format of the project (serve configs and command lines, policies,
cost/latency coefficients, traffic, reports, vLLM logs) and the JSON contract (`schema`).

Nothing outside this package opens a file cgplan reads or imports yaml; the planning core
(`cgplan.core`) sees only the frozen values these modules build.
"""
