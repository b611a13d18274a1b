"""torchrun (torch.distributed.run) with one fix for Debian's torch 1.13 on Python 3.11.

On 3.11, iterating an IntFlag skips its zero member, so torch 1.13's Std.from_str("0") (the
default --redirects/--tee) returns None and torchrun crashes in to_map. This maps it back to
Std.NONE and otherwise runs torchrun unchanged, so the benchmark measures torchrun itself.
"""
import sys

from torch.distributed.elastic.multiprocessing import api

_from_str = api.Std.from_str.__func__


def _fixed_from_str(cls, vm):
    value = _from_str(cls, vm)
    if value is None:
        return cls.NONE
    if isinstance(value, dict):
        return {k: (cls.NONE if v is None else v) for k, v in value.items()}
    return value


api.Std.from_str = classmethod(_fixed_from_str)

from torch.distributed.run import main  # noqa: E402  (after the fix, as torchrun would start)

if __name__ == "__main__":
    sys.exit(main())
