"""Interception of every outbound request of the n8n processes (mitmproxy, per run).

``launcher`` is the harness side (files, process, env); ``server`` and ``addon`` run in the
proxy process, with the python of mitmproxy's own venv (``harness.stack.install``);
``config`` and ``journal`` are read by both. This package imports nothing itself, so that
the proxy process loads only the standard library, mitmproxy and the modules it names.
"""
