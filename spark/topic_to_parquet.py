"""topic_to_parquet: load a topic's new records into Parquet, partitioned by topic/partition.

Kafka's "Hadoop parallel data loading" use case: every run reads, in parallel (one Spark task
per topic partition), the records produced since the previous run, appends them under
`output/topic=T/partition=P/`, then stores the offsets it reached in `state`. The range is
fixed on the driver before reading, so the stored offsets are exactly what was written; the
next run starts there (new partitions and topics from their earliest offset).

    kafkapy-spark-submit topic_to_parquet --spec spark/topic_to_parquet.yaml
"""

from __future__ import annotations

import json
import sys
from typing import Any

from kafkapy.spark.clients import EARLIEST, LATEST, SourceClient
from kafkapy.spark.jobs import main, read_state, require, source_options, topics_of, write_state
from kafkapy.spark.options import offsets_from_json, offsets_to_json


def plan(bootstrap: str, topics: list[str], state: dict[str, dict[str, int]]) -> tuple[dict, dict]:
    """(starting, ending) offset JSON for this run: from where the last run stopped (earliest
    for partitions it never saw) to the latest offsets now."""
    done = offsets_from_json(state)
    with SourceClient(bootstrap) as client:
        tps = [(t, p) for t, ps in client.partitions(topics).items() for p in ps]
        ends = client.list_offsets({tp: LATEST for tp in tps})
    starts = {tp: done.get(tp, EARLIEST) for tp in tps}
    return offsets_to_json(starts), offsets_to_json(ends)


def run(spark: Any, spec: dict[str, Any]) -> int:
    require(spec, "bootstrap_servers", "topics", "output", "state")
    bootstrap, topics = str(spec["bootstrap_servers"]), topics_of(spec)
    starting, ending = plan(bootstrap, topics, read_state(spec["state"]))
    if not ending:
        print(f"topic_to_parquet: none of {topics} exists yet; nothing to load")
        return 0
    reader = (
        spark.read.format("kafkapy")
        .option("kafka.bootstrap.servers", bootstrap)
        # assign, not subscribe: exactly the partitions planned, even if more appear meanwhile.
        .option("assign", json.dumps({t: sorted(int(p) for p in ps) for t, ps in ending.items()}))
        .option("startingOffsets", json.dumps(starting))
        .option("endingOffsets", json.dumps(ending))
    )
    if spec.get("min_partitions"):
        reader = reader.option("minPartitions", str(spec["min_partitions"]))
    for k, v in source_options(spec).items():
        reader = reader.option(k, v)
    reader.load().write.mode("append").partitionBy("topic", "partition").parquet(str(spec["output"]))
    # Only after the data is written: a failed run leaves the state as it was.
    write_state(spec["state"], ending)
    print(f"topic_to_parquet: loaded {json.dumps(starting)} .. {json.dumps(ending)} into {spec['output']}")
    return 0


if __name__ == "__main__":
    sys.exit(main("topic_to_parquet", run))
