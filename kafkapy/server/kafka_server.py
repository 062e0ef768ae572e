"""KafkaServer: the broker's start-up and shutdown order and its broker state.

Start-up follows Kafka's KafkaServer.startup: ZooKeeper (and the cluster id), the broker id,
the logs (recovering them after an unclean shutdown), the socket server, the replica manager,
the broker's registration in ZooKeeper, the controller, and then requests are served.
Shutdown runs the other way round and ends with a clean-shutdown marker in every log dir.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from concurrent.futures import Executor
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from kafkapy.server.broker_registration import BrokerRegistration
from kafkapy.server.dynamic_broker_config import LOG_CONFIGS, DynamicBrokerConfig
from kafkapy.server.dynamic_config_manager import DynamicConfigManager
from kafkapy.server.log_tasks import LogTasks
from kafkapy.server.meta_properties import check_and_write_meta_properties
from kafkapy.server.metadata_cache import MetadataCache
from kafkapy.server.metrics.http_server import MetricsServer
from kafkapy.server.metrics.registry import BrokerMetrics
from kafkapy.server.network.socket_server import ListenerEndpoint, SocketServer
from kafkapy.server.producer_id_manager import ProducerIdManager
from kafkapy.server.quota.client_quota_manager import QuotaWindow
from kafkapy.server.quota.quota_managers import ClientQuotas, QuotaSettings
from kafkapy.server.replica_manager import ReplicaManager
from kafkapy.server.replication_quota import ReplicationQuotas
from kafkapy.server.security.acl_authorizer import AclAuthorizer
from kafkapy.server.zk_connection import ZooKeeperConnection

if TYPE_CHECKING:
    from kafkapy.server.apis.kafka_apis import KafkaApis
    from kafkapy.server.controller.kafka_controller import KafkaController
    from kafkapy.server.coordinator.group_coordinator import GroupCoordinator
    from kafkapy.server.transaction.transaction_coordinator import TransactionCoordinator

log = logging.getLogger("kafkapy.server.KafkaServer")

# How long start-up waits for the controller's first UpdateMetadata before serving clients anyway.
STARTUP_METADATA_WAIT_S = 10.0
# First pause before retrying a failed re-registration after a session expiry (doubles to 5 s).
REREGISTER_BACKOFF_S = 0.5


class BrokerState(IntEnum):
    """Kafka's broker states (the values of its BrokerState metric)."""

    NotRunning = 0
    Starting = 1
    RecoveringFromUncleanShutdown = 2
    RunningAsBroker = 3
    PendingControlledShutdown = 6
    BrokerShuttingDown = 7


class KafkaServer:
    def __init__(self, config: Any) -> None:
        self.config = config
        self.state = BrokerState.NotRunning
        self.broker_id: int = config.broker_id
        self.cluster_id: str | None = None
        self.zk = ZooKeeperConnection(config)
        self.log_manager: Any = None
        self.metadata_cache: MetadataCache | None = None
        self.replica_manager: ReplicaManager | None = None
        self.socket_server: SocketServer | None = None
        self.apis: KafkaApis | None = None
        self.controller: KafkaController | None = None
        self.group_coordinator: GroupCoordinator | None = None
        self.transaction_coordinator: TransactionCoordinator | None = None
        self.producer_id_manager: ProducerIdManager | None = None
        # How the controller and the replica fetchers connect to the inter-broker listener.
        self._inter_broker_security: Any = None
        self.registration: BrokerRegistration | None = None
        self.log_tasks: LogTasks | None = None
        self._stop = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.io_executor: Any = None
        self.authorizer: AclAuthorizer | None = None
        # Delegation tokens (KIP-48): the cache SCRAM logins with tokenauth=true read.
        self.token_manager: Any = None
        self._token_expiry_task: asyncio.Task[None] | None = None
        self.metrics = BrokerMetrics(_api_name)
        self.metrics_server: MetricsServer | None = None

    @property
    def log_ident(self) -> str:
        return f"[KafkaServer id={self.broker_id}]"

    # -- process entry point --------------------------------------------------------------------

    def run(self) -> int:
        """Run until SIGTERM/SIGINT; returns the process exit code."""
        return asyncio.run(self._run())

    async def _run(self) -> int:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self.metrics.watch_loop_thread()  # NetworkProcessorAvgIdlePercent: this thread's CPU clock
        self.io_executor = _executor(self.config)
        loop.set_default_executor(self.io_executor)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stop.set)
        try:
            await self.startup()
        except Exception:
            log.exception("%s Fatal error during KafkaServer startup. Prepare to shutdown", self.log_ident)
            await self.shutdown()
            return 1
        await self._stop.wait()
        await self.shutdown()
        return 0

    def request_stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)

    # -- startup --------------------------------------------------------------------------------

    async def startup(self) -> None:
        from kafkapy.server.apis.kafka_apis import ApiCollaborators, KafkaApis
        from kafkapy.server.log.cleaner.log_cleaner import CleanerConfig
        from kafkapy.server.log.log_config import LogConfig
        from kafkapy.server.log.log_manager import LogManager

        loop = asyncio.get_running_loop()
        log.info("%s starting", self.log_ident)
        self.state = BrokerState.Starting
        # Key stores, JAAS lines and mechanisms are checked before anything else starts: a
        # misconfigured listener (GSSAPI included) stops the broker here, as Kafka's does.
        from kafkapy.server.security.channel_builder import inter_broker_client_security

        listener_security = self._listener_security()
        self._inter_broker_security = inter_broker_client_security(self.config)
        await loop.run_in_executor(None, self.zk.connect)
        zk = self.zk.client
        cluster_id: str = await loop.run_in_executor(None, zk.get_or_create_cluster_id)
        self.cluster_id = cluster_id
        log.info("Cluster ID = %s", cluster_id)
        if self.broker_id < 0:
            self.broker_id = await loop.run_in_executor(None, zk.generate_broker_id)

        # Dynamic broker configs count before anything reads the config (Kafka's order).
        self.dynamic_broker_config = DynamicBrokerConfig(self.config, self.broker_id)
        await loop.run_in_executor(None, self.dynamic_broker_config.initialize, zk)
        default_log_config = LogConfig.from_props(self.config.log_config_props())
        topic_configs = await loop.run_in_executor(None, self._all_topic_configs, default_log_config)
        # The fsync of a rolled-out segment runs on the io threads, never on the event loop.
        scheduler = self.io_executor.submit if self.io_executor is not None else None
        self.log_manager = LogManager(
            self.config.log_dirs, default_log_config, topic_configs, scheduler=scheduler,
            recovery_threads_per_data_dir=self.config.num_recovery_threads_per_data_dir,
            cleaner_config=CleanerConfig.from_kafka_config(self.config),
        )  # fmt: skip
        # Only the dirs that could be created and locked: a failed one is offline from the start.
        await loop.run_in_executor(
            None,
            check_and_write_meta_properties,
            self.log_manager.live_log_dirs,
            self.broker_id,
            self.cluster_id,
        )
        if not self.log_manager.had_clean_shutdown():
            self.state = BrokerState.RecoveringFromUncleanShutdown
        await loop.run_in_executor(None, self.log_manager.startup)
        self.state = BrokerState.Starting

        self.metadata_cache = MetadataCache(self.broker_id)
        self.producer_id_manager = ProducerIdManager(self.broker_id, zk)
        self.quotas = ReplicationQuotas.create(self.config, self.dynamic_broker_config)
        self.client_quotas = _client_quotas(
            self.config
        )  # produce/fetch/request quotas, filled from ZooKeeper below
        self.replica_manager = ReplicaManager(
            self.broker_id,
            self.log_manager,
            self._log_config_for,
            self.config,
            lambda: self.zk.client,
            leader_quota=self.quotas.leader,
            fetcher_connect=self._inter_broker_connect,
            topic_stats=self.metrics.topics,
        )
        self.replica_manager.fetcher_manager.quota = self.quotas.follower
        self.log_manager.moves.quota = self.quotas.alter_log_dirs
        await loop.run_in_executor(None, self._load_topic_throttles)
        self.dynamic_broker_config.add_listener(self._on_broker_reconfigured)
        # The ACL cache is loaded before any request is served (Kafka starts its authorizer
        # before the socket server's data plane).
        self.authorizer = await loop.run_in_executor(None, self._start_authorizer)
        from kafkapy.server.security.delegation_tokens import DelegationTokenManager

        self.token_manager = DelegationTokenManager.from_config(self.config, zk)
        await loop.run_in_executor(None, self.token_manager.startup)
        if self.token_manager.enabled:
            self._token_expiry_task = loop.create_task(self._expire_tokens_periodically())
        from kafkapy.server.coordinator.group_coordinator import GroupCoordinator

        # Before the controller starts: its first LeaderAndIsr may make us lead __consumer_offsets.
        self.group_coordinator = GroupCoordinator(self.broker_id, self.config, self.replica_manager)
        self.group_coordinator.startup()
        from kafkapy.server.transaction.transaction_coordinator import TransactionCoordinator

        self.transaction_coordinator = TransactionCoordinator(
            self.broker_id, self.config, self.replica_manager, self.producer_id_manager, self.metadata_cache,
            self.group_coordinator, self.inter_broker_security,
        )  # fmt: skip
        self.transaction_coordinator.startup()
        self.apis = KafkaApis(
            ApiCollaborators(
                config=self.config,
                broker_id=self.broker_id,
                cluster_id=cluster_id,
                zk=zk,
                replica_manager=self.replica_manager,
                metadata_cache=self.metadata_cache,
                log_manager=self.log_manager,
                log_config_for=self._log_config_for,
                dynamic_broker_config=self.dynamic_broker_config,
                producer_id_manager=self.producer_id_manager,
                group_coordinator=self.group_coordinator,
                transaction_coordinator=self.transaction_coordinator,
                client_quotas=self.client_quotas,
                token_manager=self.token_manager,
                authorizer=self.authorizer,
            )
        )
        from kafkapy.protocol import framing

        api_name = _api_name
        self.socket_server = SocketServer(
            self.config,
            [
                ListenerEndpoint(ep.listener_name, ep.security_protocol, ep.host, ep.port)
                for ep in self.config.listener_endpoints()
            ],
            self.apis,
            framing.parse_request_header,
            api_name,
            listener_security,
            metrics=self.metrics.requests,
        )
        await self.socket_server.startup()
        self.log_tasks = LogTasks(self.config, self.log_manager, self.replica_manager)
        self.log_tasks.start()
        self.replica_manager.startup()  # isr-expiration and isr-change-propagation

        self.dynamic_config_manager = DynamicConfigManager(
            zk,
            self._apply_topic_config,
            lambda name: self.dynamic_broker_config.reload(self.zk.client, name),
            lambda path: self.client_quotas.update_entity(self.zk.client, path),
        )
        await loop.run_in_executor(None, self.dynamic_config_manager.startup)
        # After the change listener is in place, so no change falls between the two.
        await loop.run_in_executor(None, self.client_quotas.load, zk)

        self.registration = BrokerRegistration(self.config, zk, self.broker_id, self.socket_server.bound)
        await loop.run_in_executor(None, self.registration.register)
        self.zk.on_new_session(self._on_new_zk_session)

        from kafkapy.server.controller.channel_manager import default_connection_factory
        from kafkapy.server.controller.kafka_controller import KafkaController

        security = self._inter_broker_security
        self.controller = controller = KafkaController(
            self.config,
            zk,
            self.registration.broker_info,
            self.registration.broker_epoch,
            connection_factory=lambda host, port, client_id, timeout: default_connection_factory(
                host, port, client_id, timeout, security
            ),
        )
        await loop.run_in_executor(None, controller.startup)
        self.apis.bind_controller(self.registration, controller)
        self.metrics.bind(self)
        if self.config.kafkapy_metrics_port >= 0:
            self.metrics_server = MetricsServer(
                self.config.kafkapy_metrics_host, self.config.kafkapy_metrics_port, self.metrics.registry
            )
            await loop.run_in_executor(None, self.metrics_server.start)
        await self._await_cluster_metadata(loop, controller)
        self.apis.start_processing()
        self.state = BrokerState.RunningAsBroker
        log.info("%s started", self.log_ident)

    async def _await_cluster_metadata(
        self, loop: asyncio.AbstractEventLoop, controller: KafkaController
    ) -> None:
        """Kafka's order: clients are served last. Wait (bounded) until the election is decided and
        the controller's first UpdateMetadata has arrived, so no client is told "no controller"
        and an empty broker list by a broker that has just registered; and, when the cluster has
        topics, until their partition states have arrived too. A new controller sends the live
        brokers first and the partitions in its next batch. A broker that served in between (the
        controller's own broker restarted within its old session's timeout, the controller
        elected only then) answered the producers queued on it from an empty cache: their topic
        LEADER_NOT_AVAILABLE with no partitions, and librdkafka failed their records with
        _UNKNOWN_PARTITION and produced nothing to the topic for over 30 s."""
        deadline = loop.time() + STARTUP_METADATA_WAIT_S
        await loop.run_in_executor(None, controller.await_election, STARTUP_METADATA_WAIT_S)
        cache = self.metadata_cache
        assert cache is not None  # created earlier in startup

        async def before_deadline(event: asyncio.Event) -> bool:
            try:
                await asyncio.wait_for(event.wait(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                return False
            return True

        if not await before_deadline(cache.initialized):
            log.warning(
                "%s No UpdateMetadata from the controller (%d) within %.0f s of start-up; serving "
                "requests with this broker's own view until it arrives",
                self.log_ident,
                controller.active_controller_id,
                STARTUP_METADATA_WAIT_S,
            )
            return
        if cache.partition_states_arrived.is_set():
            return
        topics = await loop.run_in_executor(None, self.zk.client.get_all_topics_in_cluster)
        if topics and not await before_deadline(cache.partition_states_arrived):
            log.warning(
                "%s No partition states from the controller (%d) within %.0f s of start-up though "
                "%d topics exist; serving requests with the brokers it sent until they arrive",
                self.log_ident,
                controller.active_controller_id,
                STARTUP_METADATA_WAIT_S,
                len(topics),
            )

    @property
    def inter_broker_security(self) -> Any:
        """ClientSecurity of the inter-broker listener (PLAINTEXT before start-up computed it)."""
        from kafkapy.client.sasl_client import PLAINTEXT

        return self._inter_broker_security or PLAINTEXT

    def _inter_broker_connect(self, host: str, port: int, **kwargs: Any) -> Any:
        """A replica fetcher's connection to a leader, on the inter-broker listener's protocol."""
        from kafkapy.client.connection import BrokerConnection

        return BrokerConnection(host, port, security=self._inter_broker_security, **kwargs)

    def _listener_security(self) -> dict[str, Any]:
        """TLS contexts and SASL settings of the listeners that need them (configuration errors,
        GSSAPI included, stop the start-up here)."""
        from kafkapy.server.security.channel_builder import listener_security

        return {
            ep.listener_name: listener_security(
                self.config,
                ep.listener_name,
                ep.security_protocol,
                self._scram_credential,
                self._token_credential,
            )
            for ep in self.config.listener_endpoints()
            if ep.security_protocol != "PLAINTEXT"
        }

    async def _scram_credential(self, mechanism: str, user: str) -> Any:
        """A user's SCRAM credential from /config/users/<user>, read off the loop. Read at each
        authentication, so a credential changed by kafkapy-configs applies to the next login."""
        from kafkapy.server.security.scram import ScramError, read_scram_credential
        from kafkapy.zk.admin_zk_client import AdminZkClient

        def read() -> Any:
            try:
                return read_scram_credential(AdminZkClient(self.zk.client), user, mechanism)
            except ScramError as e:
                log.warning("Invalid SCRAM credential of user %s: %s", user, e)
                return None

        return await asyncio.get_running_loop().run_in_executor(None, read)

    def _token_credential(self, mechanism: str, token_id: str) -> Any:
        """A delegation token's SCRAM credential and owner, from the in-memory token cache."""
        manager = self.token_manager
        return None if manager is None else manager.credential(mechanism, token_id)

    async def _expire_tokens_periodically(self) -> None:
        """Kafka's delete-expired-tokens task, every delegation.token.expiry.check.interval.ms."""
        interval_s = int(self.config.get("delegation.token.expiry.check.interval.ms")) / 1000
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval_s)
            try:
                await loop.run_in_executor(None, self.token_manager.expire_tokens)
            except Exception:
                log.exception("%s Error removing expired delegation tokens", self.log_ident)

    def _start_authorizer(self) -> AclAuthorizer | None:
        """authorizer.class.name's AclAuthorizer, its cache loaded from ZooKeeper (blocking)."""
        from kafkapy.server.security.acl import AuthorizerConfig, parse_super_users
        from kafkapy.server.security.authorizer import check_authorizer_class

        if not check_authorizer_class(self.config.get("authorizer.class.name")):
            return None
        config = AuthorizerConfig(
            parse_super_users(self.config.get("super.users")),
            bool(self.config.get("allow.everyone.if.no.acl.found")),
        )
        authorizer = AclAuthorizer(config, self.zk.client)
        authorizer.startup()
        if (
            self.config.inter_broker_security_protocol == "PLAINTEXT"
            and "User:ANONYMOUS" not in config.super_users
        ):
            # Kafka says nothing here, and a cluster whose controller is refused stalls quietly.
            log.warning(
                "%s The inter-broker listener %s is PLAINTEXT: brokers reach each other as User:ANONYMOUS, "
                "which needs ClusterAction on the cluster (or super.users) under authorizer.class.name",
                self.log_ident, self.config.inter_broker_listener_name,
            )  # fmt: skip
        return authorizer

    def _all_topic_configs(self, defaults: Any) -> dict[str, Any]:
        """Every topic's overrides from ZooKeeper, so logs load with their own configs (blocking)."""
        from kafkapy.server.log.log_config import LogConfig
        from kafkapy.zk.admin_zk_client import AdminZkClient

        configs = AdminZkClient(self.zk.client).fetch_all_topic_configs()
        return {
            topic: LogConfig.from_props(overrides, defaults)
            for topic, overrides in configs.items()
            if overrides
        }

    def _log_config_for(self, topic: str) -> Any:
        """The LogConfig of `topic`: broker defaults overridden by /config/topics/<topic> (blocking)."""
        from kafkapy.server.log.log_config import LogConfig

        overrides = self.zk.client.get_entity_configs("topics", topic) or {}
        return LogConfig.from_props({**self.config.log_config_props(), **overrides})

    def _apply_topic_config(self, topic: str) -> None:
        """A topic's config changed in ZooKeeper: give its logs the new LogConfig (kazoo thread)."""
        overrides = self.zk.client.get_entity_configs("topics", topic) or {}
        self.quotas.update_topic(topic, overrides, self.broker_id)
        config = self._log_config_for(topic)
        self.log_manager.update_config(topic, config)

    def _load_topic_throttles(self) -> None:
        """The throttled replicas of every topic, at start-up (blocking)."""
        from kafkapy.zk.admin_zk_client import AdminZkClient

        for topic, overrides in AdminZkClient(self.zk.client).fetch_all_topic_configs().items():
            self.quotas.update_topic(topic, overrides, self.broker_id)

    def _on_broker_reconfigured(self, changed: frozenset[str]) -> None:
        """Dynamic broker configs changed (kazoo thread): throttle rates, then the topic defaults
        of every log (a topic's own overrides still win)."""
        from kafkapy.server.log.log_config import LogConfig

        self.quotas.update_rates(self.dynamic_broker_config)
        if changed & LOG_CONFIGS:
            self.log_manager.default_config = LogConfig.from_props(self.config.log_config_props())
            for topic in sorted({tp.topic for tp in self.log_manager.logs_by_topic_partition()}):
                self.log_manager.update_config(topic, self._log_config_for(topic))

    def _on_new_zk_session(self) -> None:
        """Runs on the session-handler thread after the session expired and a new one was
        established: /brokers/ids/<id> died with the old session and is created again (before
        the controller's handler re-runs its election, which is registered after this one).

        Without the znode the controller treats this broker as dead however long it runs, so a
        failed attempt (ZooKeeper lost again, a retry deadline) is retried until it lands, this
        session is replaced (the new one's handler registers) or the broker shuts down.
        """
        from kazoo.exceptions import NodeExistsError

        log.info("%s ZooKeeper session re-established: re-registering broker", self.log_ident)
        if self.registration is None:
            return
        session = self.zk.client.session_id
        backoff_s = REREGISTER_BACKOFF_S
        while self.state not in (BrokerState.BrokerShuttingDown, BrokerState.NotRunning):
            try:
                self.registration.register()
                return
            except NodeExistsError:
                # Another live broker holds our id: nothing we may overwrite (Kafka fails here too).
                log.error("%s Error while re-registering broker: %s is registered by another session",
                          self.log_ident, f"/brokers/ids/{self.broker_id}")  # fmt: skip
                return
            except Exception as e:  # noqa: BLE001 - any ZooKeeper failure is retried
                if self.zk.client.session_id != session:
                    return
                log.warning("%s Error while re-registering broker: %s; retrying in %.1f s",
                            self.log_ident, e, backoff_s)  # fmt: skip
                time.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, 5.0)

    # -- shutdown -------------------------------------------------------------------------------

    async def shutdown(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        loop = asyncio.get_running_loop()
        log.info("%s shutting down", self.log_ident)
        # The shutdown's blocking steps get threads of their own: on the io executor they
        # queue behind its backlog (rolls' flushes, the leader-epoch checkpoints of a large
        # LeaderAndIsr); at 10k partitions, when each checkpoint had its own two fsyncs there,
        # the ControlledShutdown request waited seconds before it was even sent. Three: the
        # steps, awaited one by one, and two that overlap them (the logs' early write-back, the
        # metrics endpoint's stop).
        steps = ThreadPoolExecutor(3, thread_name_prefix="kafka-shutdown")
        if self.replica_manager is not None:
            self.replica_manager.is_shutting_down = True
        # While the controller moves leadership away (seconds at thousands of partitions) the
        # logs' end snapshots are written and the disk writes back what the logs hold; the close
        # then has little left.
        written_back = (
            loop.run_in_executor(steps, self.log_manager.write_back_early)
            if self.log_manager is not None
            else None
        )
        if self.state == BrokerState.RunningAsBroker and self.config.controlled_shutdown_enable:
            self.state = BrokerState.PendingControlledShutdown
            await self._controlled_shutdown(steps)
        self.state = BrokerState.BrokerShuttingDown
        if self.socket_server is not None:
            await self.socket_server.shutdown()
        # Stopping the metrics endpoint waits for its serving thread's next poll (up to 0.5 s):
        # on a thread of its own, waited for only at the end, it overlaps the steps below.
        metrics_stopped = (
            loop.run_in_executor(steps, self.metrics_server.stop) if self.metrics_server is not None else None
        )
        if self.transaction_coordinator is not None:
            self.transaction_coordinator.shutdown()
        if self.group_coordinator is not None:
            self.group_coordinator.shutdown()
        if self.log_tasks is not None:
            self.log_tasks.stop()
        if self.replica_manager is not None:
            await self.replica_manager.shutdown(steps)  # stops the replica fetchers before the logs close
        if self.controller is not None:
            await loop.run_in_executor(steps, self.controller.shutdown)
        if self.authorizer is not None:
            self.authorizer.close()
        if self._token_expiry_task is not None:
            self._token_expiry_task.cancel()
        if self.token_manager is not None:
            self.token_manager.close()
        if written_back is not None:
            # Whatever the early write-back has not reached by now, the close does itself.
            assert self.log_manager is not None
            self.log_manager.cut_early_write_back()
            await written_back
        if self.log_manager is not None:
            await loop.run_in_executor(steps, self.log_manager.shutdown)
        await loop.run_in_executor(steps, self.zk.close)
        if metrics_stopped is not None:
            await metrics_stopped
        steps.shutdown(wait=False)
        if self.io_executor is not None:
            # What is still queued there (checkpoint writes of logs now closed, which wrote
            # their checkpoints as they closed) has nothing left to do; the process exit
            # would otherwise wait for it.
            self.io_executor.shutdown(wait=False, cancel_futures=True)
        self.state = BrokerState.NotRunning
        log.info("%s shut down completed", self.log_ident)

    async def _controlled_shutdown(self, executor: Executor) -> None:
        from kafkapy.server.controlled_shutdown import request_controlled_shutdown

        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(executor, request_controlled_shutdown, self)
        except Exception as e:
            log.warning(
                "%s Controlled shutdown failed: %s; proceeding to unclean leadership moves", self.log_ident, e
            )


def _api_name(key: int) -> str:
    from kafkapy.protocol.api_keys import ApiKey

    try:
        return ApiKey(key).name
    except ValueError:
        return f"ApiKey({key})"


def _executor(config: Any) -> Any:
    from concurrent.futures import ThreadPoolExecutor

    # Blocking work (ZooKeeper reads, fsync, recovery) runs here, sized like Kafka's io threads.
    return ThreadPoolExecutor(max_workers=max(4, int(config.num_io_threads)), thread_name_prefix="kafka-io")


__all__ = ["BrokerState", "KafkaServer"]


def _client_quotas(config: Any) -> ClientQuotas:
    """The produce, fetch and request quota managers from quota.* (Kafka's QuotaFactory)."""
    window = QuotaWindow(int(config.get("quota.window.num")), float(config.get("quota.window.size.seconds")))
    return ClientQuotas(
        QuotaSettings(
            window, float(config.get("quota.producer.default")), float(config.get("quota.consumer.default"))
        )
    )
