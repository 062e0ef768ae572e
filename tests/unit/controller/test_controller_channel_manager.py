"""ControllerChannelManager: per-broker sender threads that retry until success or removal."""

import threading
import time

from controller_fakes import broker

from kafkapy.server.controller.channel_manager import ControllerChannelManager


class FlakyNetwork:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts = 0
        self.delivered: list[tuple[int, int, dict]] = []
        self.lock = threading.Lock()

    def __call__(self, host, port, client_id, timeout):
        net = self

        class Conn:
            def connect(self):
                with net.lock:
                    net.attempts += 1
                    if net.attempts <= net.failures:
                        raise ConnectionRefusedError("broker not up yet")

            def send(self, api_key, version, body):
                with net.lock:
                    net.delivered.append((port, api_key, body))
                return {"error_code": 0}

            def close(self):
                pass

        return Conn()


def test_requests_are_retried_until_the_broker_answers_then_the_callback_runs():
    net = FlakyNetwork(failures=3)
    manager = ControllerChannelManager(0, connection_factory=net)
    manager.add_broker(broker(1))
    done = threading.Event()
    responses = []
    manager.send_request(1, 6, 8, {"n": 1}, lambda r: (responses.append(r), done.set()))
    manager.send_request(1, 6, 8, {"n": 2})
    assert done.wait(5)
    deadline = time.monotonic() + 5
    while len(net.delivered) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    manager.shutdown()
    assert [b["n"] for _, _, b in net.delivered] == [1, 2]  # in order, once each
    assert net.attempts == 4 and responses == [{"error_code": 0}]


def test_removing_a_broker_stops_its_retries():
    net = FlakyNetwork(failures=10**9)
    manager = ControllerChannelManager(0, connection_factory=net)
    manager.add_broker(broker(1))
    manager.send_request(1, 6, 8, {})
    time.sleep(0.3)
    manager.remove_broker(1)
    time.sleep(0.3)
    attempts = net.attempts
    time.sleep(0.3)
    assert net.attempts == attempts and net.delivered == []


def test_requests_to_unknown_brokers_are_dropped():
    manager = ControllerChannelManager(0, connection_factory=FlakyNetwork(0))
    manager.send_request(7, 6, 8, {})  # no exception, only a warning
    assert manager.broker_ids == set()
