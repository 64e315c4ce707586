"""Decision: where each workload runs, on how many nodes, at what monthly cost.

Data flows one way: scenario -> prices (`economics`) -> every workload scored on every route
(`engine`: feasibility, standalone operating points, the words) -> the fleet plan (`fleet` builds
its inputs once per scenario; `plan` searches assignments and prices each exactly: pooled
deployments, whole nodes, one cash bill) -> attribution and the fleet record -> views and exports.

- `economics`: node $/hour by pricing option and cost basis, API cost per request, break-even, idle cost.
- `queueing`: Erlang C and the M/G/c wait's scale from the service spread (Kimura's interpolation).
- `latency`: one service-time model per workload on a deployment; the p95 of wait + service.
- `engine`: every workload scored on every route; the Evaluation record; reasons; the JSON contract.
- `plan`: the assignment search and the exact cash bill of an assignment.
- `fleet`: plan inputs from the engine's scores, attribution, node drivers, licence break-even.
- `simulate`, `checks`: a discrete-event simulation of continuous batching that checks the plan.
- `sensitivity`: verdicts at both ends of the performance ranges.
- `analysis`: fleet options side by side, SLA sweeps, price sensitivity.
"""
