"""The message unions' helpers: the best-effort request id of a frame that failed to parse."""

from __future__ import annotations

import pytest
from webshepherd.protocol.union import request_id_of


@pytest.mark.parametrize(
    ("raw", "rid"),
    [
        ('{"type": "observe", "id": "o1", "url": 5}', "o1"),
        ('{"type": "observe", "id": "o2", "axtree": "cut sh', "o2"),  # cut after the id
        (b'{"id": "o3", "type": "observe", "axtree": "\xff', "o3"),  # bytes, cut in a string
        ('{"type": "observe", "axtree": "x", "id": "o', None),  # cut inside the id
        ('{"id": "o4", "a": tru, "b": 1}', None),  # broken before the cut: no JSON at all
        ('{"id": 5}', None),
        ('["id", "o5"]', None),
        ("", None),
    ],
)
def test_request_id_of_reads_a_frame_as_far_as_it_goes(raw, rid):
    assert request_id_of(raw) == rid
