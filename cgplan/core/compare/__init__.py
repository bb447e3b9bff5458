"""Comparison: one plan or capture report as a `Side` (`sides`), two sides diffed (`diff`), a grid of
plans (`sweep`), the CI gate (`gate`), a capture measured against its plan (`measure`) and the
memory comparison (`memory`), vLLM's own answer beside the plan (`oracle`, the one field-by-field
comparison) and `cgplan verify`'s results (`verify`). Above `plan`; beside `logs`.
"""
