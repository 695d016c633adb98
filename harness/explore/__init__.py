"""Exploration (issue 18): trace one no-fault run of a workflow into its boundaries (node
starts and ends, outbound requests, ledger writes), strike at each boundary with the crash
matrix's own engine and oracle, and report the windows that break the workflow's promise,
named by node and request.

- ``boundary``: the typed trace, assembled from n8n's execution data and the interception;
- ``trace``: the live no-fault run that produces it;
- ``plan``: the strikes per boundary, and the budget;
- ``explorer``: runs the strikes through ``harness.runner.run_case``;
- ``findings``: grouping, the node strip, the report.
"""
