"""Internal: ``python -m harness`` runs the ``n8n-chaos`` command."""

from harness.entry import main

main()
