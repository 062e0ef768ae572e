from __future__ import annotations

from kafkapy.tools.transactions import pretty_print_table


def test_cells_are_padded_to_the_widest_then_tab_separated_as_kafka_prints() -> None:
    out = pretty_print_table(
        ["TransactionalId", "Coordinator"], [["a", "0"], ["long-transactional-id", "12"]]
    )
    assert out.splitlines() == [
        "TransactionalId      \tCoordinator\t",
        "a                    \t0          \t",
        "long-transactional-id\t12         \t",
    ]
