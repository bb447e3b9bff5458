"""Comparison: one plan or capture report as a `Side` (`sides`), two sides diffed (`diff`), a grid of
plans (`sweep`), the CI gate (`gate`), a capture measured against its plan (`measure`) and the
memory comparison (`memory`). Above `plan`; beside `logs`.
"""
