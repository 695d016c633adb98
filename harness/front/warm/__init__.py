"""The warm runner: one-case reruns on a warm stack without paying for imports.

``n8n-chaos up`` starts ``python -m harness.front.warm.server SOCKET`` beside its stack: an
interpreter that has imported pytest, its plugins' libraries and the harness once, then
waits. ``n8n-chaos run`` (``harness.front.warm.client``) hands it the terminal (its stdin, stdout
and stderr, passed as file descriptors), its arguments, folder and environment; the runner
forks, and the fork runs the very same ``run`` command, attached to the warm stack as any
run is. Ctrl-C in the terminal reaches the fork through the connection; a client that dies
ends its fork's run too. A run the runner cannot take (another Python or another harness
checkout, no live runner) runs in the client's own process as before.
"""
