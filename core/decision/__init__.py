"""Decision: where each workload runs, on how many nodes, at what monthly cost.

- `economics`: node $/hour by pricing option and cost basis, API cost per request, break-even, idle cost.
- `queueing`: Erlang C with the Allen–Cunneen correction, replicas for a latency target.
- `engine`: every workload scored on every route; verdicts; fleet sizing; the JSON contract.
- `analysis`: fleet options side by side, SLA sweeps, price sensitivity.
"""
