"""Workflows under test: manifests and their models, workflow JSON checks, the hosts a workflow
calls, credentials, sub-workflows, service triggers, deployment onto a stack.

Room 3 of 9 (lowest first). It imports only rooms below it (judge, stack) and the top-level
harness.errors and harness.loopback. tests/unit/test_rooms.py checks this.
"""
