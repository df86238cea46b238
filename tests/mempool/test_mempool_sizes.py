"""Size parsing: every accepted form, rounding to 256 bytes, and clear errors."""

from __future__ import annotations

import pytest

from mempool.errors import ConfigError, MempoolError, NoDeviceError
from mempool.sizes import format_size, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8GiB", 8 * 1024**3),
        ("8gib", 8 * 1024**3),
        ("512MB", 512 * 1000**2),
        ("512MiB", 512 * 1024**2),
        ("1.5 GB", 1_500_000_000),
        ("1.5GiB", 3 * 1024**3 // 2),
        (" 2 TiB ", 2 * 1024**4),
        ("4KiB", 4096),
        ("1024", 1024),
        ("1024B", 1024),
        ("1e9", 1_000_000_000),
        (1 << 30, 1 << 30),
        (0, 0),
        (None, None),
    ],
)
def test_accepted_forms(text: object, expected: int | None) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(("value", "expected"), [(1, 256), (255, 256), (257, 512), ("1KB", 1024),
                                                 ("1.1KiB", 1280), (100.5, 256)])
def test_rounds_up_to_256_bytes(value: object, expected: int) -> None:
    assert parse_size(value) == expected
    assert expected % 256 == 0


def test_percent_of_given_total_rounds_down() -> None:
    assert parse_size("50%", total=16 * 1024**3) == 8 * 1024**3
    assert parse_size("100%", total=1000) == 768  # never more than the device has
    assert parse_size("12.5%", total=8 * 1024**3) == 1024**3


@pytest.mark.cpu_only
def test_percent_without_total_needs_a_device() -> None:
    with pytest.raises(NoDeviceError, match="no CUDA device"):
        parse_size("50%")


@pytest.mark.parametrize(
    "bad", ["8G", "eight GiB", "8 GiBs", "-1GiB", "GiB", "", "1,5GB", "0%", "150%", "-5%"]
)
def test_bad_strings_name_the_value_and_the_forms(bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_size(bad, what="initial_size")
    message = str(info.value)
    assert f"initial_size={bad!r}" in message
    assert "'8GiB'" in message and "'50%'" in message and "KiB" in message
    assert isinstance(info.value, ValueError) and isinstance(info.value, MempoolError)


@pytest.mark.parametrize("bad", [-1, True, float("nan"), float("inf"), -0.5, [1], b"1GiB"])
def test_bad_values(bad: object) -> None:
    with pytest.raises(ConfigError, match="not a valid size"):
        parse_size(bad)


def test_format_size() -> None:
    assert format_size(8 * 1024**3) == "8.0 GiB"
    assert format_size(100) == "100 B"
    assert format_size(None) == "RMM default"
