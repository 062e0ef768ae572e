"""Bytecodes per pipelined single-record produce request, per function, for one or two trees.

    python benchmarks/opcount.py TREE [TREE_B]

CPU-time A/B runs on a shared machine swing by 5-10%; this count does not. Each tree is copied
to a temporary directory and its `Processor._dispatch` wrapped so that requests 20,000-20,999 of
a connection run under `sys.settrace` with opcode events (the tracer itself makes them ~3x
slower: only the count means anything). The broker then gets the small_requests workload and
writes its counts, which are printed per request (with TREE_B: both, and the difference, sorted
by it). The copy is thrown away; the trees are not touched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if __name__ == "__main__":
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "benchmarks"]
    sys.path.insert(0, str(REPO))

from benchmarks import small_requests  # noqa: E402
from benchmarks.brokers import kafkapy_broker  # noqa: E402
from benchmarks.common import create_topics  # noqa: E402

FIRST, COUNTED = 20_000, 1_000

_TRACER = """
import collections as _oc_col, sys as _oc_sys
_OC_COUNTS = _oc_col.Counter()
_OC_SEEN = [0]
def _oc_trace(frame, event, arg):
    frame.f_trace_opcodes = True
    frame.f_trace_lines = False
    if event == "opcode":
        code = frame.f_code
        _OC_COUNTS[(code.co_filename.rsplit("/kafkapy/", 1)[-1], code.co_name)] += 1
    return _oc_trace
"""

_WRAPPER = """    def _dispatch(self, frame: memoryview) -> None:
        _OC_SEEN[0] += 1
        if {first} <= _OC_SEEN[0] < {last}:
            _oc_sys.settrace(_oc_trace)
            try:
                return self._oc_dispatch(frame)
            finally:
                _oc_sys.settrace(None)
                if _OC_SEEN[0] == {last} - 1:
                    with open({out!r}, "w") as f:
                        for (path, name), n in _OC_COUNTS.items():
                            f.write(f"{{n}} {{path}} {{name}}\\n")
        return self._oc_dispatch(frame)

    def _oc_dispatch(self, frame: memoryview) -> None:
"""


def instrumented_copy(tree: Path, out: Path) -> Path:
    copy = Path(tempfile.mkdtemp(prefix="kafkapy-opcount-"))
    shutil.copytree(tree / "kafkapy", copy / "kafkapy")
    processor = copy / "kafkapy" / "server" / "network" / "processor.py"
    text = processor.read_text()
    head = "    def _dispatch(self, frame: memoryview) -> None:\n"
    if head not in text:
        raise SystemExit(f"{tree}: no Processor._dispatch(self, frame) to wrap")
    text = text.replace("\nclass Processor(", _TRACER + "\n\nclass Processor(", 1)
    text = text.replace(head, _WRAPPER.format(first=FIRST, last=FIRST + COUNTED, out=str(out)), 1)
    processor.write_text(text)
    return copy


def count(tree: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="kafkapy-opcount-out-") as work:
        out = Path(work) / "counts.txt"
        copy = instrumented_copy(tree, out)
        old = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = str(copy)
        try:
            with kafkapy_broker(Path(work) / "broker") as broker:
                create_topics(broker.bootstrap, {"opcount": 1})
                version = small_requests.produce_version([broker.bootstrap])
                small_requests.run(broker, "opcount", version, FIRST + COUNTED + 1_000)
            counts: dict[str, float] = {}
            for line in out.read_text().splitlines():
                n, path, name = line.split(" ", 2)
                counts[f"{path} {name}"] = int(n) / COUNTED
            return counts
        finally:
            if old is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = old
            shutil.rmtree(copy, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path, nargs="?")
    args = parser.parse_args()
    a = count(args.a.resolve())
    b = count(args.b.resolve()) if args.b else {}
    print(f"bytecodes per request: A {sum(a.values()):,.1f}" + (f"  B {sum(b.values()):,.1f}" if b else ""))
    for name in sorted(set(a) | set(b), key=lambda k: -abs(b.get(k, 0) - a.get(k, 0)) if b else -a[k]):
        x, y = a.get(name, 0.0), b.get(name, 0.0)
        if b and abs(y - x) >= 0.5:
            print(f"{x:8.1f} {y:8.1f} {y - x:+8.1f}  {name}")
        elif not b and x >= 0.5:
            print(f"{x:8.1f}  {name}")


if __name__ == "__main__":
    main()
