"""Internal: ``python -m harness`` runs the ``n8n-chaos`` command."""

from harness.front.entry import main

main()
