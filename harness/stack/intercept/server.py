"""The proxy process: ``python -m harness.stack.intercept.server --config <config.json>``,
run by the python of mitmproxy's venv (see ``harness.stack.install``) with PYTHONPATH holding
only ``harness``: it imports the standard library, mitmproxy and ``harness.stack.intercept``.

It makes the run's CA before it listens, so a listener that accepts means the CA is there.
A bare mitmproxy ``Master`` with one ``regular@127.0.0.1:PORT`` listener per n8n process, the
few addons a regular proxy needs and the ``Intercept`` addon. Options that would make
mitmproxy talk to the outside on its own are off: ``connection_strategy=lazy`` (no eager
connect to a CONNECT target to read its certificate), ``upstream_cert=False``; the
onboarding app is not loaded at all.

Why not mitmdump's ``DumpMaster``: it loads ~35 addons, and every hook of every connection
(about 20 per intercepted request) visits each of them; n8n opens a new connection (CONNECT,
TLS) for every request, so that dispatch was a large part of the latency the proxy added
(bench/proxy_overhead.py).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from harness.stack.intercept.config import CA_BASENAME, ProxyConfig

if TYPE_CHECKING:
    from mitmproxy.options import Options


def make_ca(confdir: Path) -> Path:
    """The run's own CA (key 0600), made once; returns the certificate n8n must trust."""
    from harness.stack.intercept.ca import write_ca

    confdir.mkdir(parents=True, exist_ok=True)
    confdir.chmod(0o700)
    if not (confdir / f"{CA_BASENAME}-ca.pem").exists():
        write_ca(confdir)
    for key_file in (f"{CA_BASENAME}-ca.pem", f"{CA_BASENAME}-ca.p12"):
        if (confdir / key_file).exists():
            (confdir / key_file).chmod(0o600)
    cert = confdir / f"{CA_BASENAME}-ca-cert.pem"
    # Public, and read by n8n containers whose user is not this one (bind-mounted alone).
    cert.chmod(0o644)
    return cert


def core_options(config: ProxyConfig) -> Options:
    from mitmproxy.options import Options

    return Options(
        mode=[f"regular@127.0.0.1:{listener.port}" for listener in config.listeners],
        confdir=str(config.confdir),
        upstream_cert=False,
        http2=False,
    )


# Options that the addons register: set once the master has loaded them.
ADDON_OPTIONS = {"connection_strategy": "lazy", "termlog_verbosity": "warn"}


async def serve(config: ProxyConfig) -> None:
    # passlib (imported by mitmproxy's proxyauth) warns at import if a bcrypt without
    # __about__ is installed: harmless, and it would be the first thing in the log.
    logging.getLogger("passlib").setLevel(logging.ERROR)
    from mitmproxy.addons import core, errorcheck, next_layer, proxyserver, tlsconfig
    from mitmproxy.master import Master

    from harness.stack.intercept.addon import Intercept

    master = Master(core_options(config), with_termlog=True)
    # What a regular proxy with TLS interception needs (the rest of mitmdump's default set
    # is for features the stack never turns on); errorcheck exits on a startup error such
    # as a port in use.
    server = proxyserver.Proxyserver()  # type: ignore[no-untyped-call]  # mitmproxy: untyped
    addons = [core.Core(), server, next_layer.NextLayer(), tlsconfig.TlsConfig()]
    master.addons.add(*addons, errorcheck.ErrorCheck())  # type: ignore[no-untyped-call]
    master.options.update(**ADDON_OPTIONS)  # type: ignore[no-untyped-call]
    master.addons.add(Intercept(config))  # type: ignore[no-untyped-call]
    await master.run()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="n8n-chaos intercepting proxy")
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--make-ca", action="store_true", help="make the CA only, then exit")
    args = parser.parse_args(argv)
    config = ProxyConfig.read(args.config)
    make_ca(config.confdir)
    if not args.make_ca:
        asyncio.run(serve(config))


if __name__ == "__main__":
    main()
