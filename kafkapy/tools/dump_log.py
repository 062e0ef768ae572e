"""kafkapy-dump-log: Kafka 2.8's kafka-dump-log.sh (kafka.tools.DumpLogSegments) in click.

    kafkapy-dump-log --files /data/t-0/00000000000000000000.log --print-data-log
    kafkapy-dump-log --files 00000000000000000000.index,00000000000000000000.timeindex --verify-index-only

`.log` files print their batches ("baseOffset: ... isvalid: true") and, with --deep-iteration
or --print-data-log, their records ("| offset: ... payload: ..."); `.index` and `.timeindex`
files print their entries checked against the segment's log, `.snapshot` files their
producers; problems found are listed on stderr at the end. Other suffixes are ignored with a
note, as Kafka does. --offsets-decoder and --transaction-log-decoder read `__consumer_offsets`
and `__transaction_state` records as Kafka's OffsetsMessageParser and TransactionLogMessageParser
print them:

    kafkapy-dump-log --offsets-decoder --files /data/__consumer_offsets-7/00000000000000000000.log
    | offset: 3 ... key: offset_commit::group=g,partition=t-0 payload: offset=42
"""

from __future__ import annotations

import os
import sys

import click

from kafkapy.tools.dump_log_segments import (
    DumpErrors,
    dump_index,
    dump_log,
    dump_producer_snapshot,
    dump_time_index,
    dump_txn_index,
)
from kafkapy.tools.dump_log_segments import (
    offsets_decoder as offsets_decoder_fn,
)
from kafkapy.tools.dump_log_segments import (
    transaction_log_decoder as transaction_log_decoder_fn,
)

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024


def _out(line: str) -> None:
    click.echo(line)


def _err(line: str) -> None:
    click.echo(line, err=True)


@click.command(
    context_settings=_CONTEXT,
    help="This tool helps to parse a log file and dump its contents to the console, useful for "
    "debugging a seemingly corrupt log segment.",
)
@click.option(
    "--files",
    "files",
    metavar="file1, file2, ...",
    help="REQUIRED: The comma separated list of data and index log files to be dumped.",
)
@click.option(
    "--print-data-log",
    is_flag=True,
    help="if set, printing the messages content when dumping data logs. Automatically set if any "
    "decoder option is specified.",
)
@click.option(
    "--deep-iteration",
    is_flag=True,
    help="if set, uses deep instead of shallow iteration. Automatically set if print-data-log is enabled.",
)
@click.option(
    "--verify-index-only",
    is_flag=True,
    help="if set, just verify the index log without printing its content.",
)
@click.option(
    "--index-sanity-check",
    is_flag=True,
    help="if set, just checks the index sanity without printing its content. This is the same check "
    "that is executed on broker startup to determine if an index needs rebuilding or not.",
)
@click.option(
    "--max-message-size",
    type=int,
    default=DEFAULT_MAX_MESSAGE_SIZE,
    show_default=True,
    metavar="size",
    help="Size of largest message.",
)
@click.option(
    "--offsets-decoder",
    is_flag=True,
    help="if set, log data will be parsed as offset data from the __consumer_offsets topic.",
)
@click.option(
    "--transaction-log-decoder",
    is_flag=True,
    help="if set, log data will be parsed as transaction metadata from the __transaction_state topic.",
)
def main(
    files: str | None,
    print_data_log: bool,
    deep_iteration: bool,
    verify_index_only: bool,
    index_sanity_check: bool,
    max_message_size: int,
    offsets_decoder: bool,
    transaction_log_decoder: bool,
) -> None:
    if not files:
        _err('Missing required argument "[files]"')
        sys.exit(1)
    errors = DumpErrors()
    print_data_log = print_data_log or offsets_decoder or transaction_log_decoder
    deep = deep_iteration or print_data_log
    decoder = (
        offsets_decoder_fn
        if offsets_decoder
        else transaction_log_decoder_fn
        if transaction_log_decoder
        else None
    )
    for path in files.split(","):
        _out(f"Dumping {path}")
        suffix = os.path.splitext(path)[1]
        try:
            if suffix == ".log":
                dump_log(path, print_data_log, deep, errors, _out, decoder)
            elif suffix == ".index":
                dump_index(path, index_sanity_check, verify_index_only, errors, max_message_size, _out)
            elif suffix == ".timeindex":
                dump_time_index(path, index_sanity_check, verify_index_only, errors, _out)
            elif suffix == ".txnindex":
                dump_txn_index(path, _out)
            elif suffix == ".snapshot":
                dump_producer_snapshot(path, _out, _err)
            else:
                _err(f"Ignoring unknown file {path}")
        except Exception as e:  # Kafka dies with a stack trace; one line naming the problem is kinder
            _err(f"Error while dumping {path}: {type(e).__name__}: {e}")
            sys.exit(1)
    errors.print(_err)


if __name__ == "__main__":
    main()
