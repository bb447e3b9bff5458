"""vLLM's logs: lines parsed into a `ParsedLog` (`parse`) and checked against a plan (`check`). Above
`plan`; beside `compare`.
"""
