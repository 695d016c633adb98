"""Exploration (issue 18): trace one no-fault run of a workflow into its boundaries (node
starts and ends, outbound requests, ledger writes), strike at each boundary with the crash
matrix's own engine and oracle, and report the windows that break the workflow's promise,
named by node and request.

- ``boundary``: the typed trace, assembled from n8n's execution data and the interception;
- ``trace``: the live no-fault run that produces it;
- ``plan``: the strikes per boundary, and the budget;
- ``explorer``: runs the strikes through ``harness.engine.runner.run_case``;
- ``findings``: grouping, the node strip, the report.

Room 7 of 9 (lowest first). It imports only rooms below it (judge, stack, workflow, engine,
matrix, terminal) and the top-level harness.errors and harness.loopback; not its peer findings.
tests/unit/test_rooms.py checks this.
"""
