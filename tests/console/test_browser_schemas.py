"""The Schemas page in a real headless Chromium (the driver of test_browser.py): from the nav
bar to the subject list, a subject with two versions side by side, a compatibility test whose
verdict the page shows, and an Avro value (written by confluent-kafka's AvroSerializer) shown
decoded in the messages page. Skips without Chromium, fails under CI=true, as test_browser."""
from __future__ import annotations

import json

import pytest

from tests.console.conftest import LiveConsole, unique
from tests.console.test_browser import driver, shot, text_of, wait_css  # noqa: F401

ck_sr = pytest.importorskip("confluent_kafka.schema_registry",
                            reason="confluent-kafka[avro,schemaregistry] is a test dependency")
from confluent_kafka.schema_registry.avro import AvroSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

V1 = {"type": "record", "name": "Reading", "fields": [{"name": "sensor", "type": "string"}]}
V2 = {"type": "record", "name": "Reading", "fields": [
    {"name": "sensor", "type": "string"}, {"name": "celsius", "type": "double", "default": 0}]}


@pytest.fixture(scope="module")
def live_registry():
    from gregor import AdminClient, Producer
    from gregor.console import ConsoleSettings
    from gregor.testing import Broker
    with Broker(schema_registry=True) as b:
        topic = unique("readings")
        with AdminClient({"bootstrap.servers": b.bootstrap_servers}) as a:
            a.create_topics([topic], num_partitions=1)
        reg = ck_sr.SchemaRegistryClient({"url": b.schema_registry_url})
        conf = {"subject.name.strategy": ck_sr.topic_subject_name_strategy}
        ctx = SerializationContext(topic, MessageField.VALUE)
        p = Producer({"bootstrap.servers": b.bootstrap_servers})
        p.send(topic, value=AvroSerializer(reg, json.dumps(V1), conf=conf)(
            {"sensor": "s-1"}, ctx)).get(10)
        p.send(topic, value=AvroSerializer(reg, json.dumps(V2), conf=conf)(
            {"sensor": "s-2", "celsius": 21.5}, ctx)).get(10)
        p.close()
        settings = ConsoleSettings(bootstrap=b.bootstrap_servers, request_timeout_s=5.0,
                                   schema_registry_url=b.schema_registry_url)
        with LiveConsole(settings) as c:
            yield c, topic


def test_schemas_page(driver, live_registry):  # noqa: F811
    live, topic = live_registry
    subject = f"{topic}-value"
    driver.get(live.url + "/")
    wait_css(driver, 'nav a[href="/schemas"]').click()
    assert text_of(driver, "#global-compatibility") == "BACKWARD"
    wait_css(driver, f'#subjects a[href="/schemas/{subject}"]').click()
    assert text_of(driver, "#subject-name") == subject
    assert text_of(driver, "#subject-versions") == "1, 2"
    changed = driver.find_elements("css selector", "#schema-diff tr.diff-insert td.diff-right,"
                                                   " #schema-diff tr.diff-replace td.diff-right")
    assert any("celsius" in td.text for td in changed)
    shot(driver, "schemas-subject")
    box = wait_css(driver, "#check-form textarea")
    box.send_keys(json.dumps({"type": "record", "name": "Reading",
                              "fields": [{"name": "sensor", "type": "int"}]}))
    wait_css(driver, "#check-form button").click()
    assert "Not compatible" in text_of(driver, "#check-result")
    driver.get(live.url + f"/topics/{topic}/messages?order=oldest")
    assert text_of(driver, "#records .schema-badge").startswith("AVRO")
    assert '"celsius":21.5' in driver.page_source
