"""What a run leaves to read: the single-file report (steps per phase, timeline SVG, verdict grid),
a case's timeline, saved cases read back (`show`, `recheck`).

Room 8 of 9 (lowest first). It imports only rooms below it (judge, stack, workflow, engine,
matrix, terminal, explore, findings) and the top-level harness.errors and harness.loopback.
tests/unit/test_rooms.py checks this.
"""
