"""What a user starts: the ``n8n-chaos`` command (``entry``, ``cli``), the pytest plugin and its
suite, the options they share, the warm runner (``warm``), and attaching to a warm stack
(``attach``).

Room 9 of 9 (the top). It imports only rooms below it (judge, stack, workflow, engine, matrix,
terminal, explore, findings, report) and the top-level harness.errors and harness.loopback.
tests/unit/test_rooms.py checks this.
"""
