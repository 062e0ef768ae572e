"""kafkapy-console: serve the web console for a Kafka-compatible cluster.

    kafkapy-console --bootstrap-server localhost:9092 [--zookeeper localhost:2181]
        [--metrics-url http://broker:9404/metrics ...] [--command-config client.properties]
        [--host 127.0.0.1] [--port 9000] [--read-write]
        [--ssl-certfile server.pem --ssl-keyfile server.key]

Read-only unless --read-write: the operator actions (create topic, add partitions, alter configs,
reassign, elect leaders, delete records, reset offsets) are then offered, each behind a
confirmation page. Plain HTTP unless --ssl-certfile/--ssl-keyfile (PEM) are given: then HTTPS
only, with Secure session cookies. Anyone who can reach a plain-HTTP console on a network can
read its session cookies (and the SASL logins): bind it to 127.0.0.1, as by default, or use TLS.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence

import click

from kafkapy.client.client_security import ClientConfigError
from kafkapy.tools.properties_args import load_config


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", required=True, help="The brokers to connect to (host:port,...).")
@click.option("--zookeeper", default=None, help="ZooKeeper connect string, for what only it knows.")
@click.option(
    "--metrics-url",
    "metrics_urls",
    multiple=True,
    help="A broker's Prometheus endpoint (kafkapy.metrics.port); repeat for each broker.",
)
@click.option(
    "--command-config", default=None, help="Client properties: security.protocol, sasl.mechanism, ssl.*"
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=9000, show_default=True, type=int)
@click.option("--read-write", is_flag=True, help="Offer the operator actions (read-only by default).")
@click.option(
    "--sample-interval",
    default=5.0,
    show_default=True,
    type=click.FloatRange(min=0.2),
    help="Seconds between samples of group lag and of the metrics endpoints (the plots).",
)
@click.option("--ssl-certfile", default=None, help="Serve HTTPS with this certificate chain (PEM).")
@click.option("--ssl-keyfile", default=None, help="The private key of --ssl-certfile (PEM).")
def console(
    bootstrap_server: str,
    zookeeper: str | None,
    metrics_urls: tuple[str, ...],
    command_config: str | None,
    host: str,
    port: int,
    read_write: bool,
    sample_interval: float,
    ssl_certfile: str | None,
    ssl_keyfile: str | None,
) -> None:
    import uvicorn

    from kafkapy.console.app import ConsoleConfig, create_app

    if (ssl_certfile is None) != (ssl_keyfile is None):
        raise click.UsageError("--ssl-certfile and --ssl-keyfile go together")
    if ssl_certfile is not None and ssl_keyfile is not None:
        try:  # here, not in uvicorn's start-up: a bad file is a usage error, not a traceback
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(ssl_certfile, ssl_keyfile)
        except (OSError, ssl.SSLError) as e:
            raise click.UsageError(f"cannot load --ssl-certfile/--ssl-keyfile: {e}") from e
    config = ConsoleConfig(
        bootstrap_server,
        load_config(command_config),
        zookeeper,
        metrics_urls,
        read_write,
        sample_interval,
        https=ssl_certfile is not None,
    )
    try:
        app = create_app(config)
    except (ClientConfigError, ValueError) as e:
        raise click.UsageError(str(e)) from e
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="info",
        access_log=False,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
    )


def main(argv: Sequence[str] | None = None) -> None:
    console.main(args=list(argv) if argv is not None else None, prog_name="kafkapy-console")


if __name__ == "__main__":
    main()
