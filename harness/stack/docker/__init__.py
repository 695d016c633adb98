"""The compose backend: the same stack as containers, driven with the docker SDK.

Only the process layer changes. Each part keeps its typed handle (``PostgresServer``,
``N8nProcess``, ...) and its ports; its ``process`` is a ``ContainerProcess`` instead of a
child process. With host networking every container listens on 127.0.0.1 on the port the
native stack picked, so addresses, Toxiproxy links, readiness probes, faults and crash points
are the same code on both backends. The project is created and removed with the compose CLI
(``compose/compose.yaml`` + ``compose/compose.local.yaml`` + a per-run file).
"""
