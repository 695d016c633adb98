"""The crash matrix: its cases, derived from the plug-ins, and the split into shards.

Room 5 of 9 (lowest first). It imports only rooms below it (judge, stack, workflow, engine) and
the top-level harness.errors and harness.loopback. tests/unit/test_rooms.py checks this.
"""
