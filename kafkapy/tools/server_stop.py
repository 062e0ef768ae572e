"""kafkapy-server-stop [config/server.properties]

Like Kafka's kafka-server-stop.sh: sends SIGTERM (or $SIGNAL) to every kafkapy broker,
found by command line; each shuts down in order (controlled shutdown first). "No kafka server
to stop" and exit code 1 when there is none. Given a properties file, only brokers started
with that file are stopped (a kafkapy addition).
"""

from __future__ import annotations

from kafkapy.tools.process_lookup import find_brokers, stop_command

main = stop_command(
    find_brokers, "kafkapy server", "No kafka server to stop", "Stop the running kafkapy broker(s)."
)

if __name__ == "__main__":
    main()
