"""meta.properties in every log dir: which broker and cluster the data belongs to.

Kafka refuses to start when a log dir belongs to another broker id or cluster, so that a
misconfigured broker cannot serve (or truncate) someone else's data.
"""

from __future__ import annotations

import os
import time

from kafkapy.common.properties import load as load_properties

META_PROPERTIES = "meta.properties"


class InconsistentBrokerIdError(RuntimeError):
    pass


def check_and_write_meta_properties(log_dirs: list[str], broker_id: int, cluster_id: str) -> None:
    for d in log_dirs:
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, META_PROPERTIES)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                props = load_properties(f.read())
            stored_id = int(props.get("broker.id", broker_id))
            if stored_id != broker_id:
                raise InconsistentBrokerIdError(
                    f"Configured broker.id {broker_id} doesn't match stored broker.id {stored_id} in "
                    f"meta.properties. If you moved your data, make sure your configured broker.id "
                    f"matches. If you intend to create a new broker, you should remove all data in your "
                    f"data directories (log.dirs)."
                )
            stored_cluster = props.get("cluster.id")
            if stored_cluster and stored_cluster != cluster_id:
                raise InconsistentBrokerIdError(
                    f"The Cluster ID {cluster_id} doesn't match stored clusterId Some({stored_cluster}) in "
                    f"meta.properties. The broker is trying to join the wrong cluster. Configured "
                    f"zookeeper.connect may be wrong."
                )
            continue
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("#\n#" + time.strftime("%a %b %d %H:%M:%S %Z %Y") + "\n")
            f.write(f"cluster.id={cluster_id}\nversion=0\nbroker.id={broker_id}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
