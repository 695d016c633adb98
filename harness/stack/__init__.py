"""The real stack: install, processes and their reaper, ports, readiness, Postgres, Redis,
Toxiproxy, n8n, the intercepting proxy, the compose backend.

Room 2 of 9 (lowest first). It imports only rooms below it (judge) and the top-level
harness.errors and harness.loopback. tests/unit/test_rooms.py checks this.
"""
