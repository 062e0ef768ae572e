"""The console over HTTPS (--ssl-certfile/--ssl-keyfile): pages answer over TLS with a Secure
session cookie, plain HTTP gets nothing, and unusable key material is a usage error at start-up."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from console_helpers import ConsoleProcess

from kafkapy.testing import KafkapyCluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the certificate helper
from security_pki import Pki, make_pki  # noqa: E402

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("console-pki"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkapyCluster]:
    c = KafkapyCluster(tmp_path_factory.mktemp("console-tls"), 1)
    try:
        c.start()
        yield c
    finally:
        c.stop()


def test_pages_are_served_over_https_with_a_secure_session_cookie(
    cluster: KafkapyCluster, pki: Pki, tmp_path: Path
) -> None:
    args = ["--bootstrap-server", cluster.bootstrap_servers]
    tls = ["--ssl-certfile", str(pki.server_cert), "--ssl-keyfile", str(pki.server_key)]
    proc = ConsoleProcess(args + tls, tmp_path / "console.log", ca=pki.ca)
    try:
        with urllib.request.urlopen(proc.url + "/", timeout=30, context=proc.tls) as response:
            assert response.status == 200
            assert b'data-broker="0"' in response.read()
            cookie = response.headers["set-cookie"]
        assert cookie.startswith("kafkapy_console_session=")
        assert "secure" in cookie.lower() and "httponly" in cookie.lower()
        # The same port does not speak plain HTTP.
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            urllib.request.urlopen(f"http://127.0.0.1:{proc.port}/", timeout=10).read()
        # A client that does not trust the console's CA refuses it.
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(proc.url + "/", timeout=10).read()
    finally:
        proc.stop()


@pytest.mark.parametrize(
    ("which", "expected"),
    [
        ("only-cert", "--ssl-certfile and --ssl-keyfile go together"),
        ("wrong-key", "cannot load --ssl-certfile/--ssl-keyfile"),
        ("missing", "cannot load --ssl-certfile/--ssl-keyfile"),
    ],
)
def test_unusable_key_material_is_a_usage_error(pki: Pki, tmp_path: Path, which: str, expected: str) -> None:
    tls = {
        "only-cert": ["--ssl-certfile", str(pki.server_cert)],
        "wrong-key": ["--ssl-certfile", str(pki.server_cert), "--ssl-keyfile", str(pki.client_key)],
        "missing": ["--ssl-certfile", str(tmp_path / "absent.pem"), "--ssl-keyfile", str(pki.server_key)],
    }[which]
    done = subprocess.run(
        [sys.executable, "-m", "kafkapy.console.cli", "--bootstrap-server", "127.0.0.1:1", *tls],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert expected in done.stderr
    assert "Traceback" not in done.stderr
