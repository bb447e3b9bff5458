"""Prediction: graph-pool memory and capture time (`cost`), step time (`latency`), KV-cache bytes
(`kv`) and the fit/check of their coefficients (`calibrate`). Above `model` and `vllm`.
"""
