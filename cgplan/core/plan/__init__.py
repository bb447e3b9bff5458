"""Planning: a `PlanInput` resolved through `vllm` into a `Plan` (`build`), its gaps and the fixes that
close them (`gaps`), fix budgets (`budgets`), what-if capture policies (`policies`), the plan
fingerprint (`fingerprint`) and a plan priced with coefficients (`assess`). Above `predict`.
"""
