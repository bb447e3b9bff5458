"""The bottom floor: what a plan is made of and what it says. Input specs (`spec`), the result types
(`types`, `predictions`), vLLM's CUDA-graph modes and platforms (`modes`), the request-count notation
(`notation`) and the environment record (`env`). Imports nothing of cgplan but `cgplan.core.errors`.
"""
