"""format("gregor") against a secured three-broker cluster (as `gregor cluster --secure` runs
one): batch write and read with the kafka.-prefixed SASL_SSL options a Spark job configured
for Spark's Kafka connector carries (Java names: sasl.jaas.config, ssl.truststore.*)."""
from __future__ import annotations

import pytest

from gregor.cli.cluster_security import spark_options
from tests.support.secure_cluster import SecureCluster

pytestmark = [
    pytest.mark.spark, pytest.mark.timeout(300),
    pytest.mark.filterwarnings("ignore:.*does not yet fully support pandas:FutureWarning")]


@pytest.fixture(scope="module")
def secure(zookeeper_server, tmp_path_factory):
    c = SecureCluster(tmp_path_factory.mktemp("spark-secure"), zookeeper_server.hosts).start()
    try:
        yield c
    finally:
        c.stop()


def test_batch_write_and_read_over_sasl_ssl(spark, secure):
    """The job runs as `etl`, a SCRAM user with ACLs for its topic only (Write to produce,
    Read to consume: what kafka-acls --producer/--consumer grant), not as a super user."""
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType,
                                       AdminClient, NewTopic, ResourcePatternType, ResourceType,
                                       ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)
    from pyspark.sql import Row
    c = secure
    admin = AdminClient(c.client_config())
    admin.create_topics([NewTopic("secured", 2, 3, config={"min.insync.replicas": "2"})]
                        )["secured"].result(60)
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    for f in admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion("etl", info, b"etl-secret")]).values():
        f.result(30)
    for f in admin.create_acls([
            AclBinding(ResourceType.TOPIC, "secured", ResourcePatternType.LITERAL, "User:etl",
                       "*", op, AclPermissionType.ALLOW)
            for op in (AclOperation.WRITE, AclOperation.READ)]).values():
        f.result(30)
    c.wait_for(lambda: all(c.can_login(b, "etl", "etl-secret") for b in c.brokers),
               what="etl on every broker")
    options = spark_options(c.files, c.bootstrap)
    options["kafka.sasl.jaas.config"] = (
        'org.apache.kafka.common.security.scram.ScramLoginModule required '
        'username="etl" password="etl-secret";')
    assert options["kafka.security.protocol"] == "SASL_SSL"
    rows = [Row(key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 2)
            for i in range(40)]
    df = spark.createDataFrame(rows, "key binary, value binary, partition int")
    (df.coalesce(1).write.format("gregor").options(**options)
     .option("kafka.acks", "all").option("topic", "secured").mode("append").save())
    back = (spark.read.format("gregor").options(**options).option("subscribe", "secured")
            .load().orderBy("partition", "offset").collect())
    assert [(r.partition, r.key, r.value) for r in back] == \
        sorted(((r.partition, r.key, r.value) for r in rows), key=lambda t: t[0])
    wrong = dict(options, **{"kafka.sasl.jaas.config": options["kafka.sasl.jaas.config"]
                             .replace("etl-secret", "not-the-password")})
    with pytest.raises(Exception, match="(?i)authentication"):
        (spark.read.format("gregor").options(**wrong).option("subscribe", "secured")
         .load().collect())
