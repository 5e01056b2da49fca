import pytest

from edgebench.errors import UserError
from edgebench.lab.cores import detect_clusters, format_cpu_list, parse_cpu_list, resolve_cores


def test_cpu_list_round_trip():
    assert parse_cpu_list("0-3,6,8-9") == [0, 1, 2, 3, 6, 8, 9]
    assert format_cpu_list([9, 8, 6, 0, 1, 2, 3]) == "0-3,6,8-9"
    assert parse_cpu_list("2,2,1") == [1, 2]
    for bad in ("", "3-1", "a", "1,,2", "-1"):
        with pytest.raises(ValueError):
            parse_cpu_list(bad)


def test_clusters_from_max_frequencies():
    # Snapdragon 8 Gen 2 layout: 3 little, 2+2 mid, 1 prime
    freqs = {0: 2016000, 1: 2016000, 2: 2016000, 3: 2803200, 4: 2803200}
    freqs.update({5: 2803200, 6: 2803200, 7: 3187200})
    clusters = detect_clusters(freqs)
    assert clusters["little"] == [0, 1, 2]
    assert clusters["mid"] == [3, 4, 5, 6]
    assert clusters["big"] == [7]
    assert clusters["prime"] == [7]
    assert detect_clusters({0: 1000, 1: 1000}) == {}
    assert detect_clusters({0: 1000, 1: 2000}) == {"little": [0], "big": [1]}


def test_resolve_cores_accepts_ids_ranges_clusters_and_all():
    clusters = {"little": [0, 1], "big": [2, 3]}
    assert resolve_cores("all", [0, 1, 2, 3], clusters, "d") is None
    assert resolve_cores("0", [0, 1, 2, 3], clusters, "d") == [0]
    assert resolve_cores("1-2", [0, 1, 2, 3], clusters, "d") == [1, 2]
    assert resolve_cores("BIG", [0, 1, 2, 3], clusters, "d") == [2, 3]


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        ("7", "cpu 7 is not available on device d (cpus 0-3)"),
        ("mid", "no cluster 'mid'"),
        ("0-", "use e.g. 0, 0-3"),
    ],
)
def test_resolve_cores_errors_name_the_problem(selection, expected):
    with pytest.raises(UserError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        resolve_cores(selection, [0, 1, 2, 3], {"little": [0, 1], "big": [2, 3]}, "d")
