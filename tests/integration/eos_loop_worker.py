"""A consume-transform-produce loop in its own process (confluent-kafka), for the exactly-once test.

    python eos_loop_worker.py BOOTSTRAP INPUT OUTPUT PARTITIONS TRANSACTIONAL_ID BATCH

Reads INPUT (read_committed, from the group's committed offsets), writes `out-<value>` to the
same partition of OUTPUT, and commits the consumed offsets in the same transaction
(send_offsets_to_transaction), BATCH records a transaction. After each commit it prints
`committed <records consumed in all, summed over partitions>`. It is crash-only: an error it
cannot retry ends the process with code 3, and whoever runs it starts it again; the restart's
init_transactions fences the old producer and aborts its open transaction, and the consumer
resumes from the offsets the last committed transaction stored.
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

TIMEOUT_S = 60.0


def main() -> None:
    bootstrap, source, sink, partitions, txn_id, batch = sys.argv[1:7]
    n_partitions, batch_size = int(partitions), int(batch)
    producer = Producer({
        "bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5,
        "transaction.timeout.ms": 30000,
    })  # fmt: skip
    producer.init_transactions(TIMEOUT_S)
    print("initialized", file=sys.stderr, flush=True)
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"{txn_id}-group", "enable.auto.commit": False,
        "isolation.level": "read_committed", "auto.offset.reset": "earliest",
    })  # fmt: skip
    wanted = [TopicPartition(source, p) for p in range(n_partitions)]
    committed = consumer.committed(wanted, timeout=TIMEOUT_S)
    print("resuming from", [tp.offset for tp in committed], file=sys.stderr, flush=True)
    # The next offset of each partition, kept here: the consumer's position() of a partition it
    # has fetched nothing from yet is "invalid", which would not say where the loop stands.
    next_offsets = {tp.partition: max(tp.offset, 0) for tp in committed}
    consumer.assign(
        [TopicPartition(source, p, o if o > 0 else OFFSET_BEGINNING) for p, o in next_offsets.items()]
    )
    idle = 0
    while True:
        got = consumer.consume(batch_size, timeout=1.0)
        for m in got:
            if m.error():
                trace(f"consumer error {m.error()}")
        messages = [m for m in got if not m.error()]
        if not messages:
            idle += 1
            if idle % 5 == 0:
                trace(f"idle at {next_offsets}")
            continue
        idle = 0
        trace(f"consumed {len(messages)}")
        producer.begin_transaction()
        for m in messages:
            producer.produce(sink, b"out-" + m.value(), m.key(), partition=m.partition())
        for m in messages:
            next_offsets[m.partition()] = max(next_offsets[m.partition()], m.offset() + 1)
        positions = [TopicPartition(source, p, o) for p, o in next_offsets.items()]
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), TIMEOUT_S)
        trace("committing")
        commit(producer)
        print("committed", sum(next_offsets.values()), flush=True)


def trace(what: str) -> None:
    print(time.strftime("%H:%M:%S"), what, file=sys.stderr, flush=True)


def commit(producer: Producer) -> None:
    for _ in range(20):
        try:
            producer.commit_transaction(TIMEOUT_S)
            return
        except KafkaException as e:
            trace(f"commit failed: {e}")
            if not e.args[0].retriable():
                raise
    raise RuntimeError("commit_transaction kept failing with retriable errors")


if __name__ == "__main__":
    try:
        main()
    except KafkaException as e:
        print("error", e, file=sys.stderr, flush=True)
        sys.exit(3)
