"""Exactly-once writes of the `kafkapy` sink (option `exactlyOnce=true`): two-phase commit over
Kafka transactions, as Flink's Kafka sink does it.

Phase one, on the executors: each task writes its rows inside a transaction of its own
transactional id, `<prefix>-<Spark partition id>`, flushes them (every record is in the log,
invisible to read_committed consumers) and returns the producer id and epoch to the driver
without ending the transaction. `init_transactions` first fences any earlier attempt of the
same task and aborts what it left open, so a retried task never adds to a failed one.

Phase two, on the driver: `commit` ends every task's transaction with EndTxn(commit) under the
task's producer id and epoch (`end_transaction_of`); `abort` ends them with EndTxn(abort).

Streaming queries also record the batch: each task's transaction commits, for the group named
after its transactional id, offset `batchId + 1` on partition 0 of the output topic (a
TxnOffsetCommit, so it becomes visible exactly when the task's records do). A batch that Spark
replays after a restart (the driver died before the batch reached the checkpoint's commit
log, possibly after committing some or all of its transactions) finds, task by task, that
its batch is already committed and writes nothing; the tasks whose transactions were not
committed write again, their earlier attempt aborted by init_transactions.

The prefix: option `transactionalIdPrefix`, else for a streaming query `kafkapy-spark-<query
id>` (the query id is kept in the checkpoint, so it is the same after a restart), else for a
batch job a random one.
"""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyspark import TaskContext
from pyspark.sql.datasource import WriterCommitMessage

from kafkapy.client.consumer import SimpleConsumer
from kafkapy.common.topic_partition import TopicPartition
from kafkapy.producer import KafkaProducer
from kafkapy.producer.transaction_manager import end_transaction_of
from kafkapy.spark import options as opts

# Spark's local properties of a micro-batch's tasks (MicroBatchExecution.BATCH_ID_KEY,
# StreamExecution.QUERY_ID_KEY).
BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"
# Writers' transactions stay open until the driver's commit: allow Kafka's maximum by default.
DEFAULT_TRANSACTION_TIMEOUT_MS = "900000"
PREFIX_OPTION = "transactionalIdPrefix"


@dataclass
class TxnCommitMessage(WriterCommitMessage):
    rows: int
    transactional_id: str
    producer_id: int  # -1: nothing to end (no rows in a batch job, or a batch already committed)
    producer_epoch: int
    already_committed: bool = False


def is_enabled(options: Mapping[str, str]) -> bool:
    return opts.get_bool(options, "exactlyOnce", False)


def check_options(options: Mapping[str, str], streaming: bool) -> None:
    if streaming and not options.get("topic"):
        raise opts.KafkaOptionError(
            "exactlyOnce streaming writes need the 'topic' option: the committed batch id is kept for "
            "partition 0 of that topic"
        )


def batch_prefix() -> str:
    """A batch job's prefix, chosen once on the driver (the writer travels to the tasks)."""
    return f"kafkapy-spark-{uuid.uuid4()}"


def task_transactional_id(prefix: str | None) -> tuple[str, int | None]:
    """(transactional id, micro-batch id or None) of the running task; without a prefix, the
    streaming query's id names it."""
    context = TaskContext.get()
    if context is None:
        raise RuntimeError("exactlyOnce writes run in Spark tasks")
    batch = context.getLocalProperty(BATCH_ID_PROPERTY)
    if prefix is None:
        query = context.getLocalProperty(QUERY_ID_PROPERTY)
        if query is None:
            raise opts.KafkaOptionError(f"exactlyOnce writes need the '{PREFIX_OPTION}' option here")
        prefix = f"kafkapy-spark-{query}"
    return f"{prefix}-{context.partitionId()}", None if batch is None else int(batch)


def producer_options(options: Mapping[str, str], transactional_id: str) -> dict[str, str]:
    return {
        "transaction.timeout.ms": DEFAULT_TRANSACTION_TIMEOUT_MS,
        **options,
        "transactional.id": transactional_id,
    }


def last_committed_batch(bootstrap_servers: str, transactional_id: str, marker: TopicPartition) -> int:
    """The micro-batch whose transaction this transactional id committed last (-1: none)."""
    consumer = SimpleConsumer(bootstrap_servers, client_id="kafkapy-spark-writer", group_id=transactional_id)
    try:
        offset = consumer.committed([marker]).get(marker)
    finally:
        consumer.close()
    return -1 if offset is None else offset - 1


def prepare(
    producer: KafkaProducer,
    bootstrap_servers: str,
    transactional_id: str,
    batch_id: int | None,
    marker: TopicPartition | None,
) -> bool:
    """Fence earlier attempts and begin the task's transaction; False when a micro-batch this
    id already committed is being replayed (the task then writes nothing)."""
    producer.init_transactions()
    if batch_id is not None and marker is not None:
        if last_committed_batch(bootstrap_servers, transactional_id, marker) >= batch_id:
            return False
    producer.begin_transaction()
    return True


def precommit(
    producer: KafkaProducer,
    transactional_id: str,
    rows: int,
    batch_id: int | None,
    marker: TopicPartition | None,
) -> TxnCommitMessage:
    """Flush the transaction (and record the batch in it) without ending it."""
    if batch_id is not None and marker is not None:
        producer.send_offsets_to_transaction({marker: batch_id + 1}, transactional_id)
    producer.flush()
    producer_id, epoch, has_content = producer.open_transaction()
    if not has_content:
        return TxnCommitMessage(rows, transactional_id, -1, -1)  # nothing written, nothing to end
    return TxnCommitMessage(rows, transactional_id, producer_id, epoch)


# Fault injection for tests: "<batch id>:<n>" SIGKILLs the driver (the process group of the
# driver's session: Python driver and JVM; Spark runs this commit in a Python worker of theirs)
# in phase two of that micro-batch once n of its transactions are committed (0: before any).
CRASH_ENV = "KAFKAPY_SPARK_EXACTLY_ONCE_CRASH"


def end_all(
    bootstrap_servers: str,
    messages: Iterable[WriterCommitMessage | None],
    commit: bool,
    batch_id: int | None = None,
) -> None:
    """Phase two on the driver: end every task's transaction. An abort is best effort (the
    next init_transactions of the id aborts whatever is still open)."""
    crash = os.environ.get(CRASH_ENV, "").split(":")
    crash_after = int(crash[1]) if commit and len(crash) == 2 and crash[0] == str(batch_id) else None
    for done, m in enumerate(m for m in messages if isinstance(m, TxnCommitMessage) and m.producer_id >= 0):
        if crash_after is not None and done >= crash_after:
            # Spark's workers sit in process groups of their own, but in the driver's session:
            # the test starts the driver as a session leader, so its group id is the session id.
            os.killpg(os.getsid(0), signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            end_transaction_of(bootstrap_servers, m.transactional_id, m.producer_id, m.producer_epoch, commit)
        except Exception:
            if commit:
                raise
