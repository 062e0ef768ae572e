"""topic_rates.py without a cluster: parsing the brokers' exposition, rates summed over brokers,
counter resets (a restarted broker), topics appearing, endpoints missing a round."""

from __future__ import annotations

from kafkapy.console.topic_rates import RateTracker, Scrape, TopicRate, broker_rates, parse_topic_counters

EXPOSITION = """\
# HELP kafka_server_brokertopicmetrics_bytesin_total BrokerTopicMetrics BytesInPerSec
# TYPE kafka_server_brokertopicmetrics_bytesin_total counter
kafka_server_brokertopicmetrics_bytesin_total 1500.0
kafka_server_brokertopicmetrics_bytesin_total{topic="orders"} 1000.0
kafka_server_brokertopicmetrics_bytesin_total{topic="audit"} 500.0
# HELP kafka_server_brokertopicmetrics_bytesout_total BrokerTopicMetrics BytesOutPerSec
# TYPE kafka_server_brokertopicmetrics_bytesout_total counter
kafka_server_brokertopicmetrics_bytesout_total{topic="orders"} 3000.0
# HELP kafka_server_brokertopicmetrics_messagesin_total BrokerTopicMetrics MessagesInPerSec
# TYPE kafka_server_brokertopicmetrics_messagesin_total counter
kafka_server_brokertopicmetrics_messagesin_total{topic="orders"} 10.0
kafka_server_brokertopicmetrics_messagesin_total{topic="audit"} 5.0
# HELP kafka_server_brokertopicmetrics_bytesrejected_total BrokerTopicMetrics BytesRejectedPerSec
# TYPE kafka_server_brokertopicmetrics_bytesrejected_total counter
kafka_server_brokertopicmetrics_bytesrejected_total{topic="orders"} 7.0
"""


def test_the_per_topic_counters_are_read_and_the_all_topics_series_left_out() -> None:
    assert parse_topic_counters(EXPOSITION) == {
        "orders": (1000.0, 3000.0, 10.0),
        "audit": (500.0, 0.0, 5.0),
    }


def test_a_broker_s_rate_is_its_increase_over_the_time_between_its_scrapes() -> None:
    before = Scrape(10.0, {"orders": (1000.0, 3000.0, 10.0)})
    after = Scrape(12.0, {"orders": (3000.0, 3000.0, 30.0), "new": (400.0, 0.0, 4.0)})
    assert broker_rates(before, after) == {
        "orders": TopicRate((1000.0, 0.0, 10.0), (2000.0, 0.0, 20.0)),
        "new": TopicRate((200.0, 0.0, 2.0), (400.0, 0.0, 4.0)),
    }


def test_a_counter_that_went_down_counts_from_zero() -> None:
    before = Scrape(0.0, {"orders": (5000.0, 100.0, 50.0)})
    restarted = Scrape(5.0, {"orders": (500.0, 100.0, 5.0)})
    assert broker_rates(before, restarted) == {"orders": TopicRate((100.0, 0.0, 1.0), (500.0, 0.0, 5.0))}


def test_rates_are_summed_over_brokers_and_a_missing_endpoint_keeps_its_base() -> None:
    tracker = RateTracker()
    zero = {"t": (0.0, 0.0, 0.0)}
    assert tracker.update({"a": Scrape(0.0, zero), "b": Scrape(0.0, zero)}) == {}
    assert tracker.update(
        {"a": Scrape(1.0, {"t": (100.0, 10.0, 1.0)}), "b": Scrape(1.0, {"t": (50.0, 0.0, 1.0)})}
    ) == {"t": TopicRate((150.0, 10.0, 2.0), (150.0, 10.0, 2.0))}
    # b is unreachable for a round: only a counts.
    assert tracker.update({"a": Scrape(2.0, {"t": (200.0, 10.0, 2.0)})}) == {
        "t": TopicRate((100.0, 0.0, 1.0), (100.0, 0.0, 1.0))
    }
    # b answers again: its increase since its last scrape, over its own 2 s.
    rates = tracker.update(
        {"a": Scrape(3.0, {"t": (300.0, 10.0, 3.0)}), "b": Scrape(3.0, {"t": (250.0, 0.0, 3.0)})}
    )
    assert rates == {"t": TopicRate((200.0, 0.0, 2.0), (300.0, 0.0, 3.0))}


def test_a_scrape_at_the_same_instant_gives_no_rate() -> None:
    assert broker_rates(Scrape(1.0, {"t": (1.0, 1.0, 1.0)}), Scrape(1.0, {"t": (2.0, 2.0, 2.0)})) == {}
