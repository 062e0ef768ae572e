"""ClientQuotaManager: one quota type's rates and throttle times (Kafka's ClientQuotaManager and
ClientRequestQuotaManager).

Each (user tag, client tag) pair that KIP-55's precedence names (quota_entity.py) has one
`Rate` over `quota.window.num` samples of `quota.window.size.seconds`. A request records its
value (bytes, or for request quotas the percentage of a second it kept the loop busy) and, if
the rate is then above the bound, is throttled for Kafka's time:

    throttle_ms = (rate - bound) / bound * window_ms

where window_ms is what the rate is measured over (at least samples-1 windows), so a client
that keeps sending at the rate the throttle allows converges on the bound. Request quotas cap
the throttle at one window, as Kafka does.

Recording happens on the event loop only (once per request, never per record). The quota
configs arrive on ZooKeeper's thread and are swapped in whole (`update`); the loop keeps a
small cache of resolved (user, client id) -> match that a swap discards.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from kafkapy.server.quota.quota_entity import QuotaEntity, QuotaMatch, QuotaType, resolve
from kafkapy.server.replication_quota import Rate, ReplicationQuotaConfig

log = logging.getLogger("kafkapy.server.ClientQuotaManager")

# Kafka's Long.MaxValue default of quota.producer.default / quota.consumer.default: no static quota.
UNBOUNDED_STATIC = float(2**63 - 1)
# Kafka drops a client's quota sensor after an hour without requests.
INACTIVE_SENSOR_EXPIRATION_S = 3600.0
_SWEEP_INTERVAL_S = 60.0
# Resolved matches kept per (user, client id); cleared past this many (many short-lived client ids).
_MAX_CACHED = 10_000

QuotaWindow = ReplicationQuotaConfig  # (num_windows, window_size_s): the same sampled stat


def throttle_time_ms(rate: float, bound: float, window_s: float) -> int:
    """Kafka's QuotaUtils.throttleTime: how long a client over `bound` must wait for its rate
    over `window_s` to come back to the bound."""
    if bound <= 0:
        return round(window_s * 1000)
    if rate <= bound:
        return 0
    return round((rate - bound) / bound * window_s * 1000)


class _Sensor:
    __slots__ = ("rate", "last_record")

    def __init__(self, window: QuotaWindow, clock: Callable[[], float]) -> None:
        self.rate = Rate(window, clock)
        self.last_record = 0.0


class ClientQuotaManager:
    def __init__(
        self,
        quota_type: QuotaType,
        window: QuotaWindow,
        static_default: float = UNBOUNDED_STATIC,
        max_throttle_ms: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quota_type = quota_type
        self.key = quota_type.value
        self.window = window
        self._static_default = static_default if static_default < UNBOUNDED_STATIC else None
        self._max_throttle_ms = max_throttle_ms
        self._clock = clock
        self._quotas: Mapping[QuotaEntity, Mapping[str, float]] = {}
        self._cache: dict[tuple[str, str], QuotaMatch | None] = {}
        self._sensors: dict[tuple[str, str], _Sensor] = {}
        self._last_sweep = clock()
        # Kafka's quotasEnabled: with no quota of this type anywhere a request costs one check.
        self.enabled = self._static_default is not None

    def update(self, quotas: Mapping[QuotaEntity, Mapping[str, float]]) -> None:
        """Every entity's quota values (from ZooKeeper; any thread): swapped in whole."""
        self._quotas = quotas
        self._cache = {}
        self.enabled = self._static_default is not None or any(self.key in v for v in quotas.values())

    def quota(self, user: str, client_id: str) -> QuotaMatch | None:
        cache = self._cache
        try:
            return cache[(user, client_id)]
        except KeyError:
            pass
        match = resolve(self._quotas, self.key, user, client_id, self._static_default)
        if len(cache) >= _MAX_CACHED:
            cache.clear()
        cache[(user, client_id)] = match
        return match

    def record_and_get_throttle_time_ms(
        self, user: str, client_id: str, value: float, now: float | None = None
    ) -> int:
        """Record `value` against the client's quota; the throttle time in ms (0 if within it)."""
        if not self.enabled:
            return 0
        match = self.quota(user, client_id)
        if match is None:
            return 0
        now = self._clock() if now is None else now
        sensor = self._sensor(match, now)
        sensor.rate.record(value, now)
        rate = sensor.rate.measure(now)
        if rate <= match.limit:
            return 0
        throttle = throttle_time_ms(rate, match.limit, sensor.rate.window_size(now))
        if self._max_throttle_ms is not None:
            throttle = min(throttle, self._max_throttle_ms)
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "Quota violated for sensor (%s:%s:%s), metric-value: (%s), bound: (%s), delay time: (%d)",
                self.quota_type.name.capitalize(),
                match.user_tag,
                match.client_tag,
                rate,
                match.limit,
                throttle,
            )
        return throttle

    def unrecord(self, user: str, client_id: str, value: float, now: float | None = None) -> None:
        """Take back a recorded value: a throttled fetch answers no data (Kafka's
        unrecordQuotaSensor)."""
        if not self.enabled:
            return
        match = self.quota(user, client_id)
        if match is None:
            return
        now = self._clock() if now is None else now
        self._sensor(match, now).rate.record(-value, now)

    def max_value_in_quota_window(self, user: str, client_id: str) -> float | None:
        """What one fetch may return without more than a window's worth of throttling (Kafka's
        getMaxValueInQuotaWindow: bound x (samples - 1) x window); None: unbounded."""
        if not self.enabled:
            return None
        match = self.quota(user, client_id)
        if match is None:
            return None
        return match.limit * (self.window.num_windows - 1) * self.window.window_size_s

    def rate(self, user: str, client_id: str, now: float | None = None) -> float:
        """The measured rate of the sensor this client shares (tests, tools)."""
        match = self.quota(user, client_id)
        if match is None:
            return 0.0
        sensor = self._sensors.get((match.user_tag, match.client_tag))
        return 0.0 if sensor is None else sensor.rate.measure(now)

    def _sensor(self, match: QuotaMatch, now: float) -> _Sensor:
        tags = (match.user_tag, match.client_tag)
        sensor = self._sensors.get(tags)
        if sensor is None:
            if now - self._last_sweep >= _SWEEP_INTERVAL_S:
                self._sweep(now)
            sensor = self._sensors[tags] = _Sensor(self.window, self._clock)
        sensor.last_record = now
        return sensor

    def _sweep(self, now: float) -> None:
        self._last_sweep = now
        stale = [k for k, s in self._sensors.items() if now - s.last_record >= INACTIVE_SENSOR_EXPIRATION_S]
        for k in stale:
            del self._sensors[k]
