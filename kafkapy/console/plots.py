"""The plots' data: consumer group lag over time and per-topic throughput, as JSON for uPlot.

The samples come from `kafkapy.console.history.History`, started with the application (its
samplers run on the server's loop, their blocking I/O on their own threads); these handlers only
read its bounded rings. Times are unix seconds, as uPlot's x axis wants them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from kafkapy.console.history import History

if TYPE_CHECKING:
    from kafkapy.console.app import Console


def make_history(console: Console) -> History | None:
    """A History for the console's cluster, its lag sampler connecting with --command-config's
    security; None on a SASL cluster when that file names no account of the console's own (the
    samplers run for everyone, not as one logged-in user)."""
    access = console.access
    if not access.has_own_credentials:
        return None
    interval = console.config.sample_interval_s
    return History(
        console.config.bootstrap_servers,
        console.config.metrics_urls,
        lag_interval_s=interval,
        rate_interval_s=interval,
        group_admin_factory=lambda: access.new_groups(None),
    )


def lifespan(console: Console) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def run(app: Starlette) -> AsyncIterator[None]:
        if console.history is not None:
            console.history.start()
        try:
            yield
        finally:
            if console.history is not None:
                await console.history.stop()

    return run


def _login_first(console: Console, request: Request) -> Response | None:
    if console.needs_login(request):
        return JSONResponse({"error": "log in first"}, status_code=401)
    if console.history is None:
        return JSONResponse({"error": "no history is kept"}, status_code=404)
    return None


async def group_lag_json(console: Console, request: Request) -> Response:
    refused = _login_first(console, request)
    if refused is not None:
        return refused
    assert console.history is not None
    group = request.path_params["group"]
    totals = console.history.group_lag_series(group)
    latest = console.history.partition_lag(group)
    partitions = {
        str(tp): [lag for _, lag in console.history.partition_lag_series(group, tp)] for tp in sorted(latest)
    }
    # A partition that joined later has fewer samples: pad its start so columns line up.
    none: list[int | None] = [None]
    partitions = {name: none * (len(totals) - len(v)) + v for name, v in partitions.items()}
    return JSONResponse(
        {"times": [t for t, _ in totals], "total": [v for _, v in totals], "partitions": partitions}
    )


async def topic_rates_json(console: Console, request: Request) -> Response:
    refused = _login_first(console, request)
    if refused is not None:
        return refused
    assert console.history is not None
    series = console.history.topic_rate_series(request.path_params["topic"])
    return JSONResponse(
        {
            "times": [s[0] for s in series],
            "bytes_in": [s[1] for s in series],
            "bytes_out": [s[2] for s in series],
            "messages_in": [s[3] for s in series],
        }
    )


async def throughput_page(console: Console, request: Request) -> Response:
    if console.needs_login(request):
        return RedirectResponse("/login?next=/throughput", status_code=303)
    history = console.history
    return console.render(
        request,
        "throughput.html",
        {
            "topics": history.topics() if history else [],
            "urls": console.config.metrics_urls,
            "endpoint_errors": history.endpoint_errors() if history else {},
            "refresh_ms": int(console.config.sample_interval_s * 1000),
        },
    )
