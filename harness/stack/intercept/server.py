"""The proxy process: ``python -m harness.stack.intercept.server --config <config.json>``.

mitmproxy's DumpMaster with one ``regular@127.0.0.1:PORT`` listener per n8n process and the
``Intercept`` addon. Options that would make mitmproxy talk to the outside on its own are off:
``connection_strategy=lazy`` (no eager connect to a CONNECT target to read its certificate),
``upstream_cert=False``, no onboarding app.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from harness.stack.intercept.config import ProxyConfig

if TYPE_CHECKING:
    from mitmproxy.options import Options


def core_options(config: ProxyConfig) -> Options:
    from mitmproxy.options import Options

    return Options(
        mode=[f"regular@127.0.0.1:{listener.port}" for listener in config.listeners],
        confdir=str(config.confdir),
        upstream_cert=False,
        http2=False,
    )


# Options that the default addons register: set once the master has loaded them.
ADDON_OPTIONS = {"connection_strategy": "lazy", "onboarding": False, "termlog_verbosity": "warn"}


async def serve(config: ProxyConfig) -> None:
    # passlib (imported by mitmproxy's proxyauth) warns at import that bcrypt 4 has no
    # __about__: harmless, and it would be the first thing in the log.
    logging.getLogger("passlib").setLevel(logging.ERROR)
    from mitmproxy.tools.dump import DumpMaster

    from harness.stack.intercept.addon import Intercept

    master = DumpMaster(core_options(config), with_termlog=True, with_dumper=False)
    master.options.update(**ADDON_OPTIONS)  # type: ignore[no-untyped-call]
    master.addons.add(Intercept(config))  # type: ignore[no-untyped-call]  # mitmproxy: untyped
    await master.run()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="n8n-chaos intercepting proxy")
    parser.add_argument("--config", type=Path, required=True)
    args = parser.parse_args(argv)
    asyncio.run(serve(ProxyConfig.read(args.config)))


if __name__ == "__main__":
    main()
