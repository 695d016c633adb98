"""What n8n itself does under faults: probes (one plug-in module each under
``harness.findings.probes``), run per n8n version by ``n8n-chaos findings`` into a findings
report (``findings.json`` + ``findings.md``), compared by ``n8n-chaos diff``.

A probe asks one question of n8n (not of a user's workflow), deploys the minimal workflow
that shows the answer, strikes its fault with the same means as the crash matrix (provider
barriers, SIGKILL, SIGSTOP) and answers from a small closed vocabulary, or UNDETERMINED with
why. Every answer carries its evidence: execution rows, Bull job states from Redis, log
lines, provider commits and attempts, and timings.

Room 7 of 9 (lowest first). It imports only rooms below it (judge, stack, workflow, engine,
matrix, terminal) and the top-level harness.errors and harness.loopback; not its peer explore.
tests/unit/test_rooms.py checks this.
"""
