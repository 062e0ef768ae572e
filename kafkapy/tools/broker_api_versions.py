"""kafkapy-broker-api-versions: kafka-broker-api-versions.sh (kafka.admin.BrokerApiVersionsCommand,
Kafka 2.8) in click.

    kafkapy-broker-api-versions --bootstrap-server 127.0.0.1:9092

For every broker the metadata names, its ApiVersions answer as Kafka's NodeApiVersions prints it
(each entry on its own line after a tab):

    127.0.0.1:9092 (id: 0 rack: null) -> (
        Produce(0): 0 to 9 [usable: 9],
        ...
        DescribeAcls(29): UNSUPPORTED,
        ...
    )

"usable" is the highest version both the broker and this tool's protocol schemas speak. APIs of
a Kafka 2.8 ZooKeeper-mode broker that the broker does not answer are listed as UNSUPPORTED; a key
this tool does not know is printed as UNKNOWN(n).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Mapping, Sequence

import click

from kafkapy.client.admin import AdminClient
from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.messages import valid_versions
from kafkapy.protocol.schema import get_spec
from kafkapy.tools.command_line import run_command

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}
_PURPOSE = "This tool helps to retrieve broker version information."
CONNECT_TIMEOUT_S = 30.0

# Kafka 2.8's ApiKeys for a ZooKeeper-mode broker (the Raft-only 52-55 and 59 are not listed).
KAFKA_28_ZK_BROKER_APIS: tuple[int, ...] = (*range(0, 52), 56, 57, 58, 60, 61)
# Names that changed after 2.8 in the schemas this tool reads.
KAFKA_28_NAMES = {ApiKey.ALTER_PARTITION: "AlterIsr"}

Printer = Callable[[str], None]


def api_name(api_key: int) -> str | None:
    """Kafka's ApiKeys name: the request spec's name without "Request"; None if unknown."""
    try:
        key = ApiKey(api_key)
    except ValueError:
        return None
    if key in KAFKA_28_NAMES:
        return KAFKA_28_NAMES[key]
    spec = get_spec(api_key, "request")
    if spec is not None:
        return spec.name.removesuffix("Request")
    return "".join(word.capitalize() for word in key.name.split("_"))


def api_version_text(api_key: int, low: int, high: int) -> str:
    """One entry as Kafka's NodeApiVersions.apiVersionToText writes it."""
    name = api_name(api_key)
    versions = f"{low}" if low == high else f"{low} to {high}"
    ours = valid_versions(api_key)
    if name is None or ours is None:
        return f"UNKNOWN({api_key}): {versions}"
    if ours[1] < low:
        usable = "[unusable: node too new]"
    elif high < ours[0]:
        usable = "[unusable: node too old]"
    else:
        usable = f"[usable: {min(ours[1], high)}]"
    return f"{name}({api_key}): {versions} {usable}"


def node_api_versions_text(versions: Mapping[int, tuple[int, int]]) -> str:
    """Kafka's NodeApiVersions.toString(lineBreaks = true)."""
    entries = {key: api_version_text(key, low, high) for key, (low, high) in versions.items()}
    for key in KAFKA_28_ZK_BROKER_APIS:
        if key not in entries:
            entries[key] = f"{api_name(key)}({key}): UNSUPPORTED"
    return "(\n\t" + ",\n\t".join(entries[k] for k in sorted(entries)) + "\n)"


def node_text(host: str, port: int, broker_id: int, rack: str | None) -> str:
    """Kafka's Node.toString."""
    return f"{host}:{port} (id: {broker_id} rack: {'null' if rack is None else rack})"


def describe_brokers(bootstrap_server: str, out: Printer) -> None:
    admin = AdminClient(bootstrap_server)
    try:
        brokers = sorted(admin.metadata([], "listAllBrokerVersionInfo").brokers, key=lambda b: b.node_id)
    finally:
        admin.close()
    for b in brokers:
        node = node_text(b.host, b.port, b.node_id, b.rack)
        try:
            with contextlib.closing(
                BrokerConnection(b.host, b.port, "kafkapy-broker-api-versions", CONNECT_TIMEOUT_S)
            ) as conn:
                versions = conn.api_versions()
        except Exception as e:  # noqa: BLE001 - Kafka prints the failure in place of the versions
            out(f"{node} -> ERROR: {getattr(e, 'message', None) or e}")
            continue
        out(f"{node} -> {node_api_versions_text(versions)}")


@click.command(context_settings=_CONTEXT, help=_PURPOSE)
@click.option(
    "--bootstrap-server",
    metavar="server(s) to use for bootstrapping",
    help="REQUIRED: The server to connect to.",
)
@click.option(
    "--command-config",
    metavar="command config property file",
    help="A property file containing configs to be passed to Admin Client (not used by kafkapy: "
    "PLAINTEXT only).",
)
def command(bootstrap_server: str | None, command_config: str | None) -> None:
    if bootstrap_server is None:
        click.echo('Missing required argument "[bootstrap-server]"', err=True)
        sys.exit(1)
    try:
        describe_brokers(bootstrap_server, click.echo)
    except Exception as e:  # noqa: BLE001 - any failure ends the command with an "Error:" line
        click.echo(f"Error: {getattr(e, 'message', None) or e or type(e).__name__}", err=True)
        sys.exit(1)


def main(argv: Sequence[str] | None = None) -> None:
    run_command(command, "kafkapy-broker-api-versions", argv, usage_if_no_args=True, purpose=_PURPOSE)


if __name__ == "__main__":
    main()
