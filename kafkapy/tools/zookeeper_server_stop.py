"""kafkapy-zookeeper-server-stop [config/zookeeper.properties]

Like Kafka's zookeeper-server-stop.sh: signals (SIGTERM, or $SIGNAL) every ZooKeeper that
kafkapy-zookeeper-server-start started, found by command line; "No zookeeper server to stop"
and exit code 1 when there is none. Given a properties file, only the ZooKeeper started from
that file is stopped (a kafkapy addition).
"""

from __future__ import annotations

from kafkapy.tools.process_lookup import find_zookeepers, stop_command

main = stop_command(
    find_zookeepers,
    "ZooKeeper",
    "No zookeeper server to stop",
    "Stop the ZooKeeper(s) started by kafkapy-zookeeper-server-start.",
)

if __name__ == "__main__":
    main()
