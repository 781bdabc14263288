"""An unknown broker setting is kept and warned about, as Kafka does, with the known names
it is close to."""
from __future__ import annotations

import logging

from gregor.broker.config import BrokerConfig


def test_a_misspelt_setting_gets_a_did_you_mean(caplog):
    with caplog.at_level(logging.WARNING, logger="gregor.broker.config"):
        cfg = BrokerConfig.load(sets=["num.partitons=3"])
    assert "num.partitons" in cfg.unknown
    assert "did you mean num.partitions?" in caplog.text


def test_a_name_close_to_nothing_gets_no_guess(caplog):
    with caplog.at_level(logging.WARNING, logger="gregor.broker.config"):
        BrokerConfig.load(sets=["zzz.qqq=1"])
    assert "not a known broker setting" in caplog.text and "did you mean" not in caplog.text


def test_a_wrong_type_is_named_with_its_article():
    import pytest

    from gregor.broker.config import ConfigError
    with pytest.raises(ConfigError, match="num.partitions expects an int, got 'x'"):
        BrokerConfig.load(sets=["num.partitions=x"])
