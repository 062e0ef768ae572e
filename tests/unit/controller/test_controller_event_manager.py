"""ControllerEventManager: one thread, in order, preemption on clear_and_put and close."""

import threading

from kafkapy.server.controller import events as ev
from kafkapy.server.controller.event_manager import ControllerEventManager


class Processor:
    def __init__(self, block: threading.Event | None = None) -> None:
        self.processed: list[object] = []
        self.preempted: list[object] = []
        self.threads: set[str] = set()
        self.block = block
        self.entered = threading.Event()

    def process(self, event):
        if self.block is not None and isinstance(event, ev.Startup):
            self.entered.set()
            self.block.wait(5)
        self.threads.add(threading.current_thread().name)
        self.processed.append(event)

    def preempt(self, event):
        self.preempted.append(event)


def test_events_are_processed_in_order_on_one_thread():
    p = Processor()
    m = ControllerEventManager(0, p)
    m.start()
    sent = [ev.PartitionModifications(f"t{i}") for i in range(50)]
    for e in sent:
        m.put(e)
    last = m.put(ev.TopicChange())
    assert last.await_processing(5)
    m.close()
    assert p.processed == [*sent, ev.TopicChange()]
    assert p.threads == {"controller-event-thread-0"}


def test_clear_and_put_preempts_pending_events_and_runs_the_new_one():
    gate = threading.Event()
    p = Processor(block=gate)
    m = ControllerEventManager(0, p)
    m.start()
    m.put(ev.Startup())  # blocks the thread until the gate opens
    assert p.entered.wait(5)
    shutdown = ev.ControlledShutdown(1, 5)
    m.put(ev.BrokerChange())
    m.put(shutdown)
    expire = m.clear_and_put(ev.Expire())
    gate.set()
    assert expire.await_processing(5)
    m.close()
    assert p.preempted == [ev.BrokerChange(), shutdown]
    assert p.processed == [ev.Startup(), ev.Expire()]


def test_a_failing_event_does_not_stop_the_thread():
    class Failing(Processor):
        def process(self, event):
            if isinstance(event, ev.BrokerChange):
                raise RuntimeError("boom")
            super().process(event)

    p = Failing()
    m = ControllerEventManager(0, p)
    m.start()
    m.put(ev.BrokerChange())
    assert m.put(ev.TopicChange()).await_processing(5)
    m.close()
    assert p.processed == [ev.TopicChange()]


def test_events_put_after_close_are_preempted_not_lost():
    p = Processor()
    m = ControllerEventManager(0, p)
    m.start()
    m.close()
    e = ev.ControlledShutdown(1, 1)
    assert m.put(e).await_processing(1)
    assert p.preempted == [e]
