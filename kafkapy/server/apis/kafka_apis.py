"""KafkaApis: the dispatch table from ApiKey to handler.

Each API family lives in its own module and registers its handlers with `@handles(ApiKey.X)`.
A handler gets the decoded request body and returns the response body, both instances of the
generated classes (`def handle_metadata(apis, request, body: MetadataRequest) ->
MetadataResponse`), or a coroutine that returns it; handlers marked `raw=True` decode their own
body (the produce hot path keeps record sets as views into the receive buffer) and return framed
bytes.

Errors: handlers raise typed exceptions from kafkapy.protocol.errors only for whole-request
failures; per-partition failures are error codes inside the response, as Kafka answers them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkapy.protocol import framing, messages
from kafkapy.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey, advertised_versions
from kafkapy.protocol.errors import ProtocolError
from kafkapy.protocol.message import Message
from kafkapy.server.fetch_session import FetchSessionCache
from kafkapy.server.network.request_channel import Request
from kafkapy.server.quota.quota_managers import ClientQuotas
from kafkapy.server.quota.throttling import QUOTA_EXEMPT_APIS

if TYPE_CHECKING:
    from kafkapy.server.broker_registration import BrokerRegistration
    from kafkapy.server.config import KafkaConfig
    from kafkapy.server.controller.kafka_controller import KafkaController
    from kafkapy.server.coordinator.group_coordinator import GroupCoordinator
    from kafkapy.server.dynamic_broker_config import DynamicBrokerConfig
    from kafkapy.server.log.log_config import LogConfig
    from kafkapy.server.log.log_manager import LogManager
    from kafkapy.server.metadata_cache import MetadataCache
    from kafkapy.server.producer_id_manager import ProducerIdManager
    from kafkapy.server.replica_manager import ReplicaManager
    from kafkapy.server.security.authorizer import Authorizer
    from kafkapy.server.security.delegation_tokens import DelegationTokenManager
    from kafkapy.server.transaction.transaction_coordinator import TransactionCoordinator
    from kafkapy.zk.kafka_zk_client import KafkaZkClient

log = logging.getLogger("kafkapy.server.KafkaApis")
request_log = logging.getLogger("kafka.request.logger")


@dataclass(frozen=True, slots=True)
class Handler:
    fn: Callable[..., Any]
    raw: bool


HANDLERS: dict[int, Handler] = {}

# What a starting broker processes before it serves clients: the controller's requests (Kafka's
# control plane) and ApiVersions, which only describes us. Everything else waits for
# start_processing(), as Kafka's data-plane listeners start processing last.
STARTUP_APIS = frozenset(
    {ApiKey.API_VERSIONS, ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA}
)


def handles(api_key: ApiKey, raw: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        HANDLERS[int(api_key)] = Handler(fn, raw)
        return fn

    return register


def advertised() -> list[tuple[int, int, int]]:
    """ApiVersions rows: only the APIs this broker has a handler for, so clients never pick one
    that would fail."""
    return advertised_versions({k: v for k, v in SUPPORTED_VERSIONS.items() if int(k) in HANDLERS})


@dataclass(frozen=True, slots=True)
class ApiCollaborators:
    """What the handlers work with, as Kafka's KafkaApis gets it in its constructor: built once in
    KafkaServer.startup when all of it exists. The controller and the broker registration come
    later (after the socket server is up): KafkaServer.startup hands them over with
    KafkaApis.bind_controller before it starts processing client requests."""

    config: KafkaConfig
    broker_id: int
    cluster_id: str
    zk: KafkaZkClient
    replica_manager: ReplicaManager
    metadata_cache: MetadataCache
    log_manager: LogManager
    log_config_for: Callable[[str], LogConfig]  # broker defaults + /config/topics/<topic> (blocking)
    dynamic_broker_config: DynamicBrokerConfig
    producer_id_manager: ProducerIdManager
    group_coordinator: GroupCoordinator
    transaction_coordinator: TransactionCoordinator
    client_quotas: ClientQuotas
    token_manager: DelegationTokenManager
    authorizer: Authorizer | None = None  # None: no authorizer.class.name, every request allowed


class KafkaApis:
    def __init__(self, collaborators: ApiCollaborators) -> None:
        # Importing the handler modules fills HANDLERS.
        from kafkapy.server.apis import (  # noqa: F401
            acls,
            api_versions,
            client_quotas,
            cluster,
            configs,
            controller_requests,
            delegation_tokens,
            elect_leaders,
            fetch,
            groups,  # the group coordinator's APIs (with apis/offsets.py)
            list_offsets,
            log_dirs,
            metadata,
            offset_for_leader_epoch,
            produce,
            producer_ids,
            reassignments,
            records,
            sasl,
            scram_credentials,
            topics,
            transaction_admin,
            transactions,
        )

        c = collaborators
        self.config: KafkaConfig = c.config
        self.broker_id: int = c.broker_id
        self.cluster_id: str = c.cluster_id
        self.zk: KafkaZkClient = c.zk
        self.replica_manager: ReplicaManager = c.replica_manager
        self.metadata_cache: MetadataCache = c.metadata_cache
        self.log_manager: LogManager = c.log_manager
        self.log_config_for: Callable[[str], LogConfig] = c.log_config_for
        self.dynamic_broker_config: DynamicBrokerConfig = c.dynamic_broker_config
        self.producer_id_manager: ProducerIdManager = c.producer_id_manager
        self.group_coordinator: GroupCoordinator = c.group_coordinator
        self.transaction_coordinator: TransactionCoordinator = c.transaction_coordinator
        self.token_manager: DelegationTokenManager = c.token_manager
        # None: no authorizer.class.name, every request allowed (auth_helper.py asks it).
        self.authorizer: Authorizer | None = c.authorizer
        # Bound by KafkaServer.startup once they exist (bind_controller), before clients are served.
        self.controller: KafkaController | None = None
        self.registration: BrokerRegistration | None = None
        self.max_request_elements: int = c.config.kafkapy_request_max_elements
        # api key -> (handler, lowest version, highest version): one lookup per request
        self._routes: dict[int, tuple[Handler, int, int]] = {
            k: (h, *SUPPORTED_VERSIONS[ApiKey(k)]) for k, h in HANDLERS.items() if k in SUPPORTED_VERSIONS
        }
        # Set until start_processing(): a client connecting the moment /brokers/ids/<id> exists
        # must not be answered from an empty metadata cache (controller -1, no brokers): the
        # admin clients of librdkafka then wait their whole timeout "for controller".
        self._starting: asyncio.Event | None = asyncio.Event()
        # Produce/fetch byte rates and request percentages (server/quota).
        self.client_quotas: ClientQuotas = c.client_quotas
        self._request_quota = self.client_quotas.request
        # Incremental fetch sessions (KIP-227): one cache for followers and consumers alike.
        # Followers' sessions read only the partitions the ReplicaManager marked as changed.
        self.fetch_sessions: FetchSessionCache = FetchSessionCache(
            c.config.max_incremental_fetch_session_cache_slots,
            watch=self.replica_manager.fetch_session_watch,
        )

    def start_processing(self) -> None:
        """Serve every API from now on, and the requests that waited for start-up (on the loop)."""
        starting, self._starting = self._starting, None
        if starting is not None:
            starting.set()

    async def _after_startup(self, request: Request, starting: asyncio.Event) -> Any:
        await starting.wait()
        result = self.handle(request)
        return await result if inspect.isawaitable(result) else result

    def bind_controller(self, registration: BrokerRegistration, controller: KafkaController) -> None:
        """The broker's registration and controller, which exist only after the socket server
        is up (the registration publishes its bound ports): called once from KafkaServer.startup."""
        self.registration = registration
        self.controller = controller

    # -- quotas (Kafka's QuotaManagers, KIP-13/55/124/219) -------------------------------------

    @staticmethod
    def quota_user(request: Request) -> str:
        """The user quotas know the request's sender by: its principal's name (ANONYMOUS
        without authentication), as Kafka's sanitized session user."""
        return request.principal.name

    def request_throttle_time_ms(self, request: Request) -> int:
        """Record the time this request kept the loop busy against its request_percentage quota
        (Kafka's ClientRequestQuotaManager); the throttle time it earns. Recorded once."""
        if not (request.loop_start_ns or request.loop_ns):
            return 0
        ns = request.loop_ns
        if request.loop_start_ns:
            ns += time.perf_counter_ns() - request.loop_start_ns
        request.loop_start_ns = request.loop_ns = 0
        # A percentage of one second of the loop (Kafka's nanosToPercentage).
        return self._request_quota.record_and_get_throttle_time_ms(
            self.quota_user(request), request.header.client_id or "", ns * 1e-7
        )

    def throttle(self, request: Request, throttle_ms: int) -> None:
        """Have the Processor mute (or delay) this connection for `throttle_ms` (KIP-219)."""
        if throttle_ms > request.throttle_time_ms:
            request.throttle_time_ms = throttle_ms

    def handle(self, request: Request) -> Any:
        header = request.header
        route = self._routes.get(header.api_key)
        if route is None or not route[1] <= header.api_version <= route[2]:
            if header.api_key == ApiKey.API_VERSIONS and (route is None or header.api_version > route[2]):
                # A client newer than us: answer in v0 with our ranges so it retries with a version we know.
                return framing.api_versions_fallback_frame(header.correlation_id, advertised())
            raise ProtocolError(f"unsupported API key {header.api_key} version {header.api_version}")
        if self._starting is not None and header.api_key not in STARTUP_APIS:
            # The frame is a view of the receive buffer, valid only until the first await: keep a copy.
            kept = dataclasses.replace(request, buffer=memoryview(bytes(request.buffer)))
            return self._after_startup(kept, self._starting)
        handler = route[0]
        if self._request_quota.enabled and header.api_key not in QUOTA_EXEMPT_APIS:
            request.loop_start_ns = time.perf_counter_ns()
        if handler.raw:
            result = handler.fn(self, request)
            if result is None or isinstance(result, bytes | bytearray):
                return result  # the produce path: framed already, no awaitable check
        else:
            body = messages.decode_request(
                header.api_key,
                header.api_version,
                request.buffer,
                request.body_offset,
                self.max_request_elements,
            )
            result = handler.fn(self, request, body)
        if inspect.isawaitable(result):
            if request.loop_start_ns:
                # Waiting (a long poll, a join) is not time on the loop: pause the measurement.
                request.loop_ns += time.perf_counter_ns() - request.loop_start_ns
                request.loop_start_ns = 0
            return self._finish(request, result, handler.raw)
        return result if handler.raw else self.frame(request, result)

    async def _finish(self, request: Request, pending: Any, raw: bool) -> Any:
        result = await pending
        if request.loop_ns:
            request.loop_start_ns = time.perf_counter_ns()
        return result if raw else self.frame(request, result)

    def frame(self, request: Request, body: Message | None, version: int | None = None) -> bytes | None:
        if body is None:
            return None
        header = request.header
        v = header.api_version if version is None else version
        throttle_ms = self.request_throttle_time_ms(request)
        if throttle_ms:
            self.throttle(request, throttle_ms)
            _set_throttle_time(body, throttle_ms)
        payload = messages.encode_response(header.api_key, v, body)
        return framing.encode_response_frame(header.api_key, v, header.correlation_id, payload)


def _set_throttle_time(body: Any, throttle_ms: int) -> None:
    """Put the throttle time in a response body (ignored by versions without the field)."""
    if isinstance(body, dict):
        body["throttle_time_ms"] = throttle_ms
    else:
        try:
            body.throttle_time_ms = throttle_ms
        except AttributeError:
            pass
