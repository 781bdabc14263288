"""format("gregor") against a secured three-broker cluster (as `gregor cluster --secure` runs
one): batch write and read with the kafka.-prefixed SASL_SSL options a Spark job configured
for Spark's Kafka connector carries (Java names: sasl.jaas.config, ssl.truststore.*)."""
from __future__ import annotations

import pytest

from gregor.cli.cluster_security import spark_options
from tests.support.secure_cluster import SecureCluster

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300),
              pytest.mark.filterwarnings("ignore:.*does not yet fully support pandas:FutureWarning")]


@pytest.fixture(scope="module")
def secure(zookeeper_server, tmp_path_factory):
    c = SecureCluster(tmp_path_factory.mktemp("spark-secure"), zookeeper_server.hosts).start()
    try:
        yield c
    finally:
        c.stop()


def test_batch_write_and_read_over_sasl_ssl(spark, secure):
    from confluent_kafka.admin import AdminClient, NewTopic
    from pyspark.sql import Row
    c = secure
    admin = AdminClient(c.client_config())
    admin.create_topics([NewTopic("secured", 2, 3, config={"min.insync.replicas": "2"})]
                        )["secured"].result(60)
    options = spark_options(c.files, c.bootstrap)
    assert options["kafka.security.protocol"] == "SASL_SSL"
    assert "ScramLoginModule" in options["kafka.sasl.jaas.config"]
    rows = [Row(key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 2)
            for i in range(40)]
    df = spark.createDataFrame(rows, "key binary, value binary, partition int")
    (df.coalesce(1).write.format("gregor").options(**options)
     .option("kafka.acks", "all").option("topic", "secured").mode("append").save())
    back = (spark.read.format("gregor").options(**options).option("subscribe", "secured")
            .load().orderBy("partition", "offset").collect())
    assert [(r.partition, r.key, r.value) for r in back] == \
        sorted(((r.partition, r.key, r.value) for r in rows), key=lambda t: t[0])
    wrong = dict(options)
    wrong["kafka.sasl.jaas.config"] = wrong["kafka.sasl.jaas.config"].replace(
        c.files.password("admin"), "not-the-password")
    with pytest.raises(Exception, match="(?i)authentication"):
        (spark.read.format("gregor").options(**wrong).option("subscribe", "secured")
         .load().collect())
