"""One case end to end: the runner and its phases, the sender, settling, the journal, the plug-in
contract and registry, and the plug-ins (deliveries, faults, crash points).

Room 4 of 9 (lowest first). It imports only rooms below it (judge, stack, workflow) and the
top-level harness.errors and harness.loopback. tests/unit/test_rooms.py checks this.
"""
