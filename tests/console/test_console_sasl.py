"""The console on a SASL cluster: each user logs in with their own cluster credentials (PLAIN
and SCRAM-SHA-256), the console's clients then talk to the brokers as that user, and wrong
credentials are refused with the broker's authentication error."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from console_helpers import ConsoleProcess

from kafkapy.client.admin import AdminClient as KafkapyAdmin
from kafkapy.client.admin import NewTopic as KafkapyNewTopic
from kafkapy.testing import KafkapyCluster, free_port

pytestmark = pytest.mark.timeout(240)

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
)
SASL_PORTS: dict[int, int] = {}


def _overrides(broker_id: int, port: int) -> dict[str, str]:
    SASL_PORTS[broker_id] = free_port()
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{SASL_PORTS[broker_id]}",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkapyCluster]:
    cluster = KafkapyCluster(tmp_path_factory.mktemp("console-sasl"), 1, {}, _overrides)
    try:
        cluster.start()
        admin = KafkapyAdmin(cluster.bootstrap_servers)
        admin.create_topic(KafkapyNewTopic("behind-sasl", 2, 1))
        admin.close()
        done = subprocess.run(
            [sys.executable, "-m", "kafkapy.tools.configs", "--zookeeper", cluster.zookeeper_connect,
             "--alter", "--entity-type", "users", "--entity-name", "carol",
             "--add-config", "SCRAM-SHA-256=[iterations=4096,password=carol-secret]"],
            capture_output=True, text=True, timeout=90, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        yield cluster
    finally:
        cluster.stop()


def start_console(
    cluster: KafkapyCluster, tmp: Path, mechanism: str, *extra: str, own_account: str = ""
) -> ConsoleProcess:
    config = tmp / f"client-{mechanism}.properties"
    config.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={mechanism}\n{own_account}")
    return ConsoleProcess(
        ["--bootstrap-server", f"127.0.0.1:{SASL_PORTS[0]}", "--command-config", str(config), *extra],
        tmp / f"console-{mechanism}.log",
    )


@pytest.fixture(scope="module")
def plain_console(
    cluster: KafkapyCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ConsoleProcess]:
    # The console's own account: its plots' lag sampler authenticates with it.
    own = (
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret";\n'
    )
    proc = start_console(
        cluster,
        tmp_path_factory.mktemp("console-plain"),
        "PLAIN",
        "--sample-interval",
        "0.5",
        own_account=own,
    )
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def scram_console(
    cluster: KafkapyCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ConsoleProcess]:
    proc = start_console(cluster, tmp_path_factory.mktemp("console-scram"), "SCRAM-SHA-256", "--read-write")
    yield proc
    proc.stop()


@pytest.fixture
def page(browser_context: Any) -> Iterator[Any]:
    browser_context.clear_cookies()  # each test starts logged out
    page = browser_context.new_page()
    yield page
    page.close()


def log_in(page: Any, user: str, password: str) -> None:
    page.locator("form#login input[name=username]").fill(user)
    page.locator("form#login input[name=password]").fill(password)
    page.locator("form#login button[type=submit]").click()
    page.wait_for_load_state()


def test_pages_ask_for_the_cluster_credentials_first(plain_console: ConsoleProcess, page: Any) -> None:
    page.goto(plain_console.url + "/topics")
    assert page.url.startswith(plain_console.url + "/login")
    assert page.locator("form#login").count() == 1
    assert page.locator("table#topics").count() == 0


def test_wrong_credentials_are_refused_with_kafka_s_authentication_error(
    plain_console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    page.goto(plain_console.url + "/login?next=/topics")
    log_in(page, "alice", "not-her-password")
    page.screenshot(path=str(screenshots / "login-refused.png"), full_page=True)
    assert page.locator(".error-name").inner_text() == "SASL_AUTHENTICATION_FAILED"
    assert (
        "Authentication failed: Invalid username or password" in page.locator(".error-message").inner_text()
    )
    page.goto(plain_console.url + "/topics")
    assert page.url.startswith(plain_console.url + "/login")


def test_plain_login_shows_the_cluster_as_that_user_and_logout_ends_it(
    cluster: KafkapyCluster, plain_console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    page.goto(plain_console.url + "/login?next=/topics")
    log_in(page, "alice", "alice-secret")
    assert page.url == plain_console.url + "/topics"
    page.screenshot(path=str(screenshots / "topics-as-alice.png"), full_page=True)
    assert page.locator('tr[data-topic="behind-sasl"] td.partitions').inner_text() == "2"
    assert page.locator("nav #user").inner_text() == "alice"
    page.goto(plain_console.url + "/topics/behind-sasl")
    assert page.locator("table#partitions tbody tr").count() == 2
    page.locator("button#logout").click()
    page.wait_for_load_state()
    page.goto(plain_console.url + "/topics")
    assert page.url.startswith(plain_console.url + "/login")


def test_the_lag_plot_samples_with_the_console_s_own_account_and_shows_to_logged_in_users(
    cluster: KafkapyCluster, plain_console: ConsoleProcess, page: Any
) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": "sasl-lagging", "enable.auto.commit": False,
    })  # fmt: skip
    try:
        consumer.commit(offsets=[TopicPartition("behind-sasl", 0, 0)], asynchronous=False)
    finally:
        consumer.close()
    api = plain_console.url + "/api/lag/sasl-lagging"
    assert page.request.get(api).status == 401
    page.goto(plain_console.url + "/login?next=/groups/sasl-lagging")
    log_in(page, "alice", "alice-secret")
    page.wait_for_function("document.querySelector('#lag-plot').getAttribute('data-points') > 1")
    assert page.request.get(api).json()["total"][-1] == 0


def test_scram_login(scram_console: ConsoleProcess, page: Any) -> None:
    page.goto(scram_console.url + "/login?next=/topics")
    log_in(page, "carol", "wrong")
    assert page.locator(".error-name").inner_text() == "SASL_AUTHENTICATION_FAILED"
    log_in(page, "carol", "carol-secret")
    assert page.url == scram_console.url + "/topics"
    assert page.locator('tr[data-topic="behind-sasl"]').count() == 1


def test_actions_run_as_the_logged_in_user(
    cluster: KafkapyCluster, scram_console: ConsoleProcess, page: Any, screenshots: Path
) -> None:
    """The console only reaches the brokers through their SASL listener: the topic exists only
    if the action's clients authenticated as carol."""
    page.goto(scram_console.url + "/login?next=/topics")
    log_in(page, "carol", "carol-secret")
    form = page.locator("form#form-create-topic")
    form.locator("input[name=topic]").fill("made-by-carol")
    form.locator("input[name=partitions]").fill("3")
    form.locator("button[type=submit]").click()
    page.locator("button#confirm").click()
    page.wait_for_selector("#result, #error")
    page.screenshot(path=str(screenshots / "created-as-carol.png"), full_page=True)
    assert "Created topic made-by-carol." in page.locator("#result").inner_text()
    admin = KafkapyAdmin(cluster.bootstrap_servers)
    try:
        assert len(admin.describe_topics(["made-by-carol"])["made-by-carol"].partitions) == 3
    finally:
        admin.close()
