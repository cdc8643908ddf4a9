"""Environment settings: a malformed value is a SettingsError that names the variable."""

from __future__ import annotations

import pytest

from services.config import Settings, SettingsError

BAD = [
    ({"SCHEDSTREAM_PARTITIONS": "four"}, "SCHEDSTREAM_PARTITIONS='four' is not an integer"),
    ({"SCHEDSTREAM_PARTITIONS": "0"}, "SCHEDSTREAM_PARTITIONS='0': must be an integer more than 0"),
    ({"SCHEDSTREAM_BATCH_SIZE": "1.5"}, "SCHEDSTREAM_BATCH_SIZE='1.5' is not an integer"),
    ({"SCHEDSTREAM_SCHEDULE_PERIOD": "nan"}, "SCHEDSTREAM_SCHEDULE_PERIOD='nan': must be a number 0 or more"),
    ({"SCHEDSTREAM_BATCH_WITHIN": "-1"}, "SCHEDSTREAM_BATCH_WITHIN='-1': must be a number 0 or more"),
    ({"SCHEDSTREAM_BATCH_BUDGET": "soon"}, "SCHEDSTREAM_BATCH_BUDGET='soon' is not a number"),
    ({"SCHEDSTREAM_LOG_LEVEL": "loud"}, "SCHEDSTREAM_LOG_LEVEL='loud' is not one of debug, info, warning"),
]


@pytest.mark.parametrize(("env", "want"), BAD, ids=[next(iter(env)) + "=" + next(iter(env.values())) for env, _ in BAD])
def test_a_malformed_setting_is_named(env: dict[str, str], want: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(env)
    assert str(raised.value).startswith(want)


def test_well_formed_settings_are_read() -> None:
    env = {
        "SCHEDSTREAM_PARTITIONS": "8",
        "SCHEDSTREAM_SNAPSHOT_EVERY": "0",
        "SCHEDSTREAM_LOG_LEVEL": "DEBUG",
        "SCHEDSTREAM_BATCH_BUDGET": "0",
    }
    settings = Settings.from_env(env)
    assert (settings.partitions, settings.snapshot_every, settings.log_level, settings.batch_budget) == (
        8,
        0,
        "DEBUG",
        0,
    )
