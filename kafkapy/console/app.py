"""The console's Starlette application: routes, the login gate, error pages.

Every page gathers its data with kafkapy's blocking clients on a worker thread (never on the
event loop) and renders a Jinja2 template with autoescaping on: names, configs and records
come from the cluster, i.e. from anyone who could create a topic or produce a record.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from kafkapy.console import read_model, records_view
from kafkapy.console.actions import STRATEGIES, action_endpoint, plan_json, reassignments_page
from kafkapy.console.clients import ClusterAccess, Credentials
from kafkapy.console.plots import group_lag_json, lifespan, make_history, throughput_page, topic_rates_json
from kafkapy.console.sessions import Session, SessionStore
from kafkapy.protocol.errors import (
    KafkaError,
    SaslAuthenticationException,
    UnknownTopicOrPartitionException,
)
from kafkapy.zk.errors import ZooKeeperClientTimeoutError

HERE = Path(__file__).parent
RECORDS_DEFAULT, RECORDS_MAX = 20, 500


@dataclass(frozen=True)
class ConsoleConfig:
    bootstrap_servers: str
    client_properties: dict[str, str] = field(default_factory=dict)
    zookeeper: str | None = None
    metrics_urls: tuple[str, ...] = ()
    read_write: bool = False
    # How often the plots' samplers measure group lag and scrape the metrics endpoints.
    sample_interval_s: float = 5.0
    https: bool = False  # served with --ssl-certfile: session cookies are Secure


class Console:
    """The application's state: how to reach the cluster, the sessions, the templates."""

    def __init__(self, config: ConsoleConfig) -> None:
        self.config = config
        self.access = ClusterAccess(config.bootstrap_servers, config.client_properties)
        self.sessions = SessionStore(secure_cookies=config.https)
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True,  # always, whatever the file name: cluster data is untrusted
            undefined=jinja2.StrictUndefined,
        )
        self.templates = Jinja2Templates(env=env)
        self.history = make_history(self)

    # -- sessions and login ---------------------------------------------------------------------

    def session(self, request: Request) -> tuple[Session, bool]:
        """The request's session, and whether it was just created (its cookie must be set)."""
        session = self.sessions.get(request)
        if session is not None:
            return session, False
        return self.sessions.create(), True

    def credentials(self, request: Request) -> Credentials | None:
        session = self.sessions.get(request)
        return session.credentials if session else None

    def needs_login(self, request: Request) -> bool:
        return self.access.sasl and self.credentials(request) is None

    def render(self, request: Request, template: str, context: dict[str, Any], status: int = 200) -> Response:
        session, new = self.session(request)
        response = self.templates.TemplateResponse(
            request,
            template,
            {
                "read_write": self.config.read_write,
                "csrf_token": session.csrf_token,
                "user": session.credentials.username if session.credentials else None,
                "sasl": self.access.sasl,
                "plots": bool(self.config.metrics_urls) and self.history is not None,
                "history": self.history is not None,
                "refresh_ms": int(self.config.sample_interval_s * 1000),
                **context,
            },
            status_code=status,
        )
        if new:
            self.sessions.set_cookie(response, session)
        return response

    def error_page(self, request: Request, error: KafkaError, status: int) -> Response:
        return self.render(
            request, "error.html", {"error_name": error.name, "message": error.message}, status
        )

    async def page(
        self,
        request: Request,
        template: str,
        gather: Callable[[Credentials | None], dict[str, Any]],
    ) -> Response:
        if self.needs_login(request):
            return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)
        try:
            context = await run_in_threadpool(gather, self.credentials(request))
        except UnknownTopicOrPartitionException as e:
            return self.error_page(request, e, 404)
        except SaslAuthenticationException as e:
            return self.error_page(request, e, 401)
        except KafkaError as e:
            return self.error_page(request, e, 502)
        return self.render(request, template, context)


def create_app(config: ConsoleConfig) -> Starlette:
    console = Console(config)

    def with_console(
        handler: Callable[[Console, Request], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await handler(console, request)

        return endpoint

    routes = [
        Route("/", with_console(brokers_page)),
        Route("/topics", with_console(topics_page)),
        Route("/topics/{topic}", with_console(topic_page)),
        Route("/topics/{topic}/partitions/{partition:int}", with_console(records_page)),
        Route("/groups", with_console(groups_page)),
        # Group ids may hold "/" (topic names may not): the path converter keeps them whole.
        Route("/groups/{group:path}", with_console(group_page)),
        Route("/login", with_console(login_page), methods=["GET", "POST"]),
        Route("/logout", with_console(logout), methods=["POST"]),
        Route("/actions/{action}", with_console(action_endpoint), methods=["POST"]),
        Route("/reassignments", with_console(reassignments_page)),
        Route("/throughput", with_console(throughput_page)),
        Route("/api/lag/{group:path}", with_console(group_lag_json)),
        Route("/api/topics/{topic}/rates", with_console(topic_rates_json)),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan(console))
    app.state.console = console
    return app


# -- pages ----------------------------------------------------------------------------------------


async def brokers_page(console: Console, request: Request) -> Response:
    zookeeper = console.config.zookeeper

    def gather(credentials: Credentials | None) -> dict[str, Any]:
        from kafkapy.console.zk_view import broker_endpoints

        endpoints, zookeeper_error = None, None
        if zookeeper:
            try:
                endpoints = broker_endpoints(zookeeper)
            except ZooKeeperClientTimeoutError as e:
                # The brokers still answer: show what Metadata says, and why the rest is missing.
                zookeeper_error = str(e)
        with console.access.admin(credentials) as admin:
            return {
                "brokers": read_model.brokers(admin, endpoints),
                "zookeeper": zookeeper,
                "zookeeper_error": zookeeper_error,
            }

    return await console.page(request, "brokers.html", gather)


async def topics_page(console: Console, request: Request) -> Response:
    def gather(credentials: Credentials | None) -> dict[str, Any]:
        with console.access.admin(credentials) as admin:
            return {"topics": read_model.topics(admin)}

    return await console.page(request, "topics.html", gather)


async def topic_page(console: Console, request: Request) -> Response:
    name = request.path_params["topic"]

    def gather(credentials: Credentials | None) -> dict[str, Any]:
        with console.access.admin(credentials) as admin, console.access.groups(credentials) as groups:
            detail = read_model.topic(admin, groups, name)
        assignment = {p.partition: p.replicas for p in detail.partitions}
        return {"topic": detail, "plan_json": plan_json(assignment, name)}

    return await console.page(request, "topic.html", gather)


async def records_page(console: Console, request: Request) -> Response:
    name, partition = request.path_params["topic"], request.path_params["partition"]
    try:
        count = min(RECORDS_MAX, max(1, int(request.query_params.get("count", RECORDS_DEFAULT))))
    except ValueError:
        count = RECORDS_DEFAULT

    def gather(credentials: Credentials | None) -> dict[str, Any]:
        with console.access.admin(credentials) as admin, console.access.groups(credentials) as groups:
            return {
                "records": records_view.newest_records(admin, groups, name, partition, count),
                "count": count,
            }

    return await console.page(request, "records.html", gather)


async def groups_page(console: Console, request: Request) -> Response:
    def gather(credentials: Credentials | None) -> dict[str, Any]:
        with console.access.groups(credentials) as groups:
            return {"groups": read_model.group_list(groups)}

    return await console.page(request, "groups.html", gather)


async def group_page(console: Console, request: Request) -> Response:
    group_id = request.path_params["group"]

    def gather(credentials: Credentials | None) -> dict[str, Any]:
        with console.access.groups(credentials) as groups:
            return {"group": read_model.group(groups, group_id), "strategies": STRATEGIES}

    return await console.page(request, "group.html", gather)


# -- login ----------------------------------------------------------------------------------------


def _safe_next(target: str | None) -> str:
    # Only paths of this console: an absolute URL here would make the login an open redirect.
    if not target or not target.startswith("/") or target.startswith("//"):
        return "/"
    return target


async def login_page(console: Console, request: Request) -> Response:
    if not console.access.sasl:
        return RedirectResponse("/", status_code=303)
    if request.method == "GET":
        return console.render(
            request,
            "login.html",
            {
                "next": _safe_next(request.query_params.get("next")),
                "error": None,
                "mechanism": console.access.mechanism,
            },
        )
    session, new = console.session(request)
    form = await request.form()
    if not new and not secrets.compare_digest(str(form.get("csrf_token", "")), session.csrf_token):
        return Response("Invalid form token", status_code=403)
    credentials = Credentials(str(form.get("username", "")), str(form.get("password", "")))
    target = _safe_next(str(form.get("next", "/")))

    try:
        await run_in_threadpool(console.access.authenticate, credentials)
    except KafkaError as e:
        return console.render(
            request,
            "login.html",
            {"next": target, "error": e, "mechanism": console.access.mechanism},
            status=401,
        )
    # A fresh session id on login: an id planted before the login is worth nothing after it.
    console.sessions.drop(session)
    fresh = console.sessions.create()
    fresh.credentials = credentials
    response = RedirectResponse(target, status_code=303)
    console.sessions.set_cookie(response, fresh)
    return response


async def logout(console: Console, request: Request) -> Response:
    session = console.sessions.get(request)
    if session is not None:
        form = await request.form()
        if not secrets.compare_digest(str(form.get("csrf_token", "")), session.csrf_token):
            return Response("Invalid form token", status_code=403)
        console.sessions.drop(session)
    return RedirectResponse("/login" if console.access.sasl else "/", status_code=303)
