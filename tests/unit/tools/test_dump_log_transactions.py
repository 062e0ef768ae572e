"""kafkapy-dump-log on transaction files: `--transaction-log-decoder` for __transaction_state
segments and `.txnindex` files, in Kafka's wording."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kafkapy.protocol.control_records import ControlRecordType, EndTxnMarker, build_control_batch
from kafkapy.protocol.record_codec import build_batch
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.transaction import transaction_log as txn_log
from kafkapy.server.transaction.transaction_state import TransactionState
from kafkapy.tools.dump_log import main


def test_transaction_log_decoder_prints_kafkas_parser_output(tmp_path: Path) -> None:
    log = Log(str(tmp_path / "__transaction_state-0"), LogConfig())
    value = txn_log.TxnLogValue(5, 1, 60_000, TransactionState.ONGOING, (("t", 0), ("t", 1)), 1_234, 1_000)
    log.append_as_leader(build_batch([(txn_log.key_bytes("tx"), txn_log.value_bytes(value), (), 1_234)]))
    log.append_as_leader(build_batch([(txn_log.key_bytes("gone"), None, (), 1_234)]))
    log.close()
    path = str(tmp_path / "__transaction_state-0" / "00000000000000000000.log")
    out = CliRunner().invoke(main, ["--files", path, "--transaction-log-decoder"]).output
    assert (
        " key: transaction_metadata::transactionalId=tx payload: producerId:5,producerEpoch:1,state=Ongoing,"
        "partitions=[t-0,t-1],txnLastUpdateTimestamp=1234,txnTimeoutMs=60000"
    ) in out
    assert " key: transaction_metadata::transactionalId=gone payload: <DELETE>" in out


def test_txn_index_dump_lists_aborted_transactions(tmp_path: Path) -> None:
    log = Log(str(tmp_path / "t-0"), LogConfig())
    log.append_as_leader(build_batch([(b"k", b"v", (), 1)], producer_id=3, producer_epoch=0, base_sequence=0,
                                     transactional=True))  # fmt: skip
    log.append_as_leader(
        build_control_batch(3, 0, EndTxnMarker(ControlRecordType.ABORT, 2), 1), from_coordinator=True
    )
    log.close()
    path = str(tmp_path / "t-0" / "00000000000000000000.txnindex")
    out = CliRunner().invoke(main, ["--files", path]).output
    assert "version: 0 producerId: 3 firstOffset: 0 lastOffset: 1 lastStableOffset: 2" in out
