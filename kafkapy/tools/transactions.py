"""kafkapy-transactions: Kafka 3.0's kafka-transactions.sh (TransactionsCommand) in click.

    kafkapy-transactions --bootstrap-server 127.0.0.1:9092 list
    kafkapy-transactions --bootstrap-server 127.0.0.1:9092 describe --transactional-id my-txn
    kafkapy-transactions --bootstrap-server 127.0.0.1:9092 describe-producers --topic t --partition 0
    kafkapy-transactions --bootstrap-server 127.0.0.1:9092 abort --topic t --partition 0 --start-offset 42

`list` asks every broker (ListTransactions), `describe` the id's coordinator (FindCoordinator,
then DescribeTransactions), `describe-producers` the partition's leader (DescribeProducers).
Tables are printed as Kafka's prettyPrintTable does: each cell padded to its column's widest
value, followed by a tab. `abort` (transactions_abort.py) writes an ABORT marker through the
partition leader. (`find-hanging` is not implemented.)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

import click

from kafkapy.client.admin import AdminClient
from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import UnknownTopicOrPartitionException, error_name
from kafkapy.tools.command_line import run_command
from kafkapy.tools.transactions_abort import (
    AbortFailed,
    AbortTransactionSpec,
    failure,
    marker_outcome,
    spec_from_arguments,
    spec_from_producers,
)

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}
TRANSACTION_KEY_TYPE = 1


def pretty_print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in (headers, *rows)) for i in range(len(headers))]
    return "\n".join(
        "".join(cell + " " * (widths[i] - len(cell)) + "\t" for i, cell in enumerate(row))
        for row in (headers, *rows)
    )


def _fail(message: str) -> None:
    click.echo(message, err=True)
    sys.exit(1)


@click.group(context_settings=_CONTEXT)
@click.option("--bootstrap-server", required=True, help="host:port of one or more brokers")
@click.pass_context
def cli(ctx: click.Context, bootstrap_server: str) -> None:
    """This tool is used to analyze the transactional state of producers in the cluster."""
    ctx.obj = AdminClient(bootstrap_server)
    ctx.call_on_close(ctx.obj.close)


@cli.command("list")
@click.pass_obj
def list_cmd(admin: AdminClient) -> None:
    """List transactions (every broker's, as coordinator)."""
    md = admin._metadata(None, "listTransactions")
    rows = []
    for broker in sorted(md.brokers, key=lambda b: b.node_id):
        _, resp = admin._send((broker.host, broker.port), ApiKey.LIST_TRANSACTIONS,
                              lambda v: {"state_filters": [], "producer_id_filters": [], "duration_filter": -1})  # fmt: skip
        if resp.error_code:
            _fail(f"Failed to list transactions of broker {broker.node_id}: {error_name(resp.error_code)}")
        rows += [[s.transactional_id, str(broker.node_id), str(s.producer_id), s.transaction_state]
                 for s in resp.transaction_states]  # fmt: skip
    click.echo(pretty_print_table(["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], rows))


def _coordinator(admin: AdminClient, transactional_id: str) -> tuple[int, tuple[str, int]]:
    md = admin._metadata(None, "findCoordinator")
    broker = md.brokers[0]
    deadline = time.monotonic() + admin.timeout_ms / 1000
    while True:
        version, resp = admin._send((broker.host, broker.port), ApiKey.FIND_COORDINATOR, lambda v: (
            {"key_type": TRANSACTION_KEY_TYPE, "coordinator_keys": [transactional_id]} if v >= 4
            else {"key_type": TRANSACTION_KEY_TYPE, "key": transactional_id}
        ))  # fmt: skip
        found = resp.coordinators[0] if version >= 4 else resp
        if found.error_code == 0:
            return found.node_id, (found.host, found.port)
        if time.monotonic() > deadline:
            _fail(f"Failed to find the coordinator of {transactional_id}: {error_name(found.error_code)}")
        time.sleep(0.2)


@cli.command("describe")
@click.option("--transactional-id", required=True, help="Transactional id")
@click.pass_obj
def describe_cmd(admin: AdminClient, transactional_id: str) -> None:
    """Describe the state of an active transactional-id."""
    node, address = _coordinator(admin, transactional_id)
    _, resp = admin._send(
        address, ApiKey.DESCRIBE_TRANSACTIONS, lambda v: {"transactional_ids": [transactional_id]}
    )
    s = resp.transaction_states[0]
    if s.error_code:
        _fail(f"Failed to describe transactional-id {transactional_id}: {error_name(s.error_code)}")
    now = int(time.time() * 1000)
    start = s.transaction_start_time_ms
    partitions = ",".join(f"{t.topic}-{p}" for t in s.topics for p in t.partitions)
    row = [
        str(node), s.transactional_id, str(s.producer_id), str(s.producer_epoch), s.transaction_state,
        str(s.transaction_timeout_ms), str(start), str(now - start) if start >= 0 else "None", partitions,
    ]  # fmt: skip
    headers = [
        "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
        "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions",
    ]  # fmt: skip
    click.echo(pretty_print_table(headers, [row]))


def _leader(admin: AdminClient, topic: str, partition: int, call: str) -> tuple[str, int] | None:
    md = admin._metadata([topic], call)
    leader = next((p.leader_id for t in md.topics if t.name == topic for p in t.partitions
                   if p.partition_index == partition), -1)  # fmt: skip
    brokers: dict[int, Any] = {b.node_id: b for b in md.brokers}
    if leader not in brokers:
        return None
    return brokers[leader].host, brokers[leader].port


def _describe_producers(admin: AdminClient, address: tuple[str, int], topic: str, partition: int) -> Any:
    _, resp = admin._send(address, ApiKey.DESCRIBE_PRODUCERS,
                          lambda v: {"topics": [{"name": topic, "partition_indexes": [partition]}]})  # fmt: skip
    return resp.topics[0].partitions[0]


@cli.command("describe-producers")
@click.option("--topic", required=True, help="Topic name")
@click.option("--partition", required=True, type=int, help="Partition number")
@click.pass_obj
def describe_producers_cmd(admin: AdminClient, topic: str, partition: int) -> None:
    """Describe the states of active producers for a topic partition."""
    address = _leader(admin, topic, partition, "describeProducers")
    if address is None:
        _fail(f"Failed to find the leader of {topic}-{partition}")
    p = _describe_producers(admin, address, topic, partition)  # type: ignore[arg-type]
    if p.error_code:
        _fail(f"Failed to describe producers of {topic}-{partition}: {error_name(p.error_code)}")
    rows = [
        [str(s.producer_id), str(s.producer_epoch), str(s.coordinator_epoch), str(s.last_sequence),
         str(s.last_timestamp), "None" if s.current_txn_start_offset < 0 else str(s.current_txn_start_offset)]
        for s in p.active_producers
    ]  # fmt: skip
    headers = ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
               "CurrentTransactionStartOffset"]  # fmt: skip
    click.echo(pretty_print_table(headers, rows))


@cli.command("abort")
@click.option("--topic", required=True, help="topic name")
@click.option("--partition", required=True, type=int, help="partition number")
@click.option("--start-offset", type=int, help="start offset of the transaction to abort (brokers on 3.0+)")
@click.option("--producer-id", type=int, help="producer id (brokers older than 3.0)")
@click.option("--producer-epoch", type=int, help="producer epoch (brokers older than 3.0)")
@click.option("--coordinator-epoch", type=int, help="coordinator epoch (brokers older than 3.0)")
@click.pass_obj
def abort_cmd(
    admin: AdminClient,
    topic: str,
    partition: int,
    start_offset: int | None,
    producer_id: int | None,
    producer_epoch: int | None,
    coordinator_epoch: int | None,
) -> None:
    """Abort a hanging transaction (requires administrative privileges)."""
    try:
        spec = spec_from_arguments(
            topic, partition, start_offset, producer_id, producer_epoch, coordinator_epoch
        )
        if spec is None:
            spec = _spec_at_offset(admin, topic, partition, start_offset)  # type: ignore[arg-type]
        _abort(admin, spec)
    except AbortFailed as e:
        _fail(e.message)


def _spec_at_offset(
    admin: AdminClient, topic: str, partition: int, start_offset: int
) -> AbortTransactionSpec:
    context = f"Failed to validate producer state for partition {topic}-{partition}"
    address = _leader(admin, topic, partition, "describeProducers")
    if address is None:
        raise failure(context, "This server does not host this topic-partition")
    p = _describe_producers(admin, address, topic, partition)
    if p.error_code:
        raise failure(context, p.error_message or error_name(p.error_code))
    return spec_from_producers(topic, partition, start_offset, p.active_producers)


def _abort(admin: AdminClient, spec: AbortTransactionSpec) -> None:
    """One ABORT marker through the leader, retried on a moved or unknown leader until the
    admin timeout (the admin client's abortTransaction)."""
    request = {
        "markers": [{
            "producer_id": spec.producer_id, "producer_epoch": spec.producer_epoch, "transaction_result": False,
            "topics": [{"name": spec.topic, "partition_indexes": [spec.partition]}],
            "coordinator_epoch": spec.coordinator_epoch,
        }]
    }  # fmt: skip
    context = f"Failed to abort transaction {spec}"
    deadline = time.monotonic() + admin.timeout_ms / 1000
    while True:
        address = _leader(admin, spec.topic, spec.partition, "abortTransaction")
        code = UnknownTopicOrPartitionException.code
        if address is not None:
            _, resp = admin._send(address, ApiKey.WRITE_TXN_MARKERS, lambda v: request)
            code = next(
                (p.error_code for m in resp.markers if m.producer_id == spec.producer_id for t in m.topics
                 if t.name == spec.topic for p in t.partitions if p.partition_index == spec.partition),
                -1,
            )  # fmt: skip
        outcome = marker_outcome(spec, code)
        if outcome is None:
            return
        if outcome != "retry":
            raise failure(context, outcome)
        if time.monotonic() > deadline:
            raise failure(context, f"Timed out waiting for the leader of {spec.topic}-{spec.partition}")
        time.sleep(0.2)


def main(argv: Sequence[str] | None = None) -> None:
    run_command(cli, "kafkapy-transactions", argv, usage_if_no_args=True)


if __name__ == "__main__":
    main()
