"""Run every bench, or the ones named: ``python -m bench [read_path] [client] [write_path]``.

Each bench is a module of this package with a ``main()`` that prints its figures. A bench that cannot run
here (say, no Java for DynamoDB Local) prints why and the others still run; the exit status is 0 whatever the
figures (a bench reports, it does not judge), and 2 for a name that is no bench (nothing runs).
"""

from __future__ import annotations

import importlib
import sys
import time
import traceback

BENCHES = ["read_path", "client", "write_path"]


def main(names: list[str]) -> int:
    unknown = [name for name in names if name not in BENCHES]
    if unknown:  # --help, a typo: say what there is, run nothing
        print(f"usage: python -m bench [{'] ['.join(BENCHES)}]; not a bench: {', '.join(unknown)}", file=sys.stderr)
        return 2
    for name in names or BENCHES:
        print(f"== bench.{name}", flush=True)
        started = time.perf_counter()
        try:
            importlib.import_module(f"bench.{name}").main()
        except Exception:  # noqa: BLE001 - report and go on with the next bench
            traceback.print_exc(limit=3)
            print(f"bench.{name} did not complete")
        print(f"== bench.{name}: {time.perf_counter() - started:.1f} s\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
