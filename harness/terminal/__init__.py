"""What an engineer reads in the terminal during and after a run of the crash matrix.

outcome   one case's result as the terminal, the summary file and recheck see it
grid      workflow x scenario -> verdicts (a pure model; the report draws it too)
view      rich renderings: the case line, the grid with its legend
live      the live line of the cases in progress (phase, elapsed), only on a terminal
summary   the verdict summary file of a run, and the exit code it gives (0 / 1 / 2)
reporter  the pytest plugin that drives the above (registered by ``harness.front.plugin``)

Room 6 of 9 (lowest first). It imports only rooms below it (judge, stack, workflow, engine,
matrix) and the top-level harness.errors and harness.loopback. tests/unit/test_rooms.py checks
this.
"""
