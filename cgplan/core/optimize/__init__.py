"""The top floor: the capture-ladder optimiser (`search`: the re-plan search), its dynamic programme
(`partition`, shared by the padding and time objectives), the time objective (`timed`) and traffic
(`traffic`, `traffic_cost`).
"""
