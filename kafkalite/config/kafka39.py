"""Every broker config of Apache Kafka 3.9 (KafkaConfig's ConfigDef, non-internal): name, type, update mode and
Kafka's default, as facts, one per line. kafkalite's own definitions of the settings it reads are in
``kafkalite.config.defs`` (:data:`~kafkalite.config.defs.BROKER`); ``kafkalite.config.broker_describe`` reads the
two as one table, kafkalite's definition first (its default is the value kafkalite uses).

Columns: name, type (int long short double boolean string list class password), update mode (``ro``
read-only, ``broker`` per-broker dynamic, ``cluster`` cluster-wide dynamic: Kafka's
DynamicBrokerConfig.AllDynamicConfigs), default as DescribeConfigs shows it (``-`` = null, ``""`` = empty).
Used for DescribeConfigs of the broker (every config Kafka lists, with its type, sensitivity -- passwords
-- and read-only flag), for telling "a Kafka setting kafkalite does not act on" from "a name nobody knows",
and for the settings AlterConfigs may change dynamically.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class KafkaBrokerConfig:
    name: str
    type: str
    mode: str               # "ro", "broker" or "cluster"
    default: str | None     # Kafka 3.9's default, as DescribeConfigs renders it

    @property
    def dynamic(self) -> bool:
        return self.mode != "ro"


_TABLE = """
advertised.listeners	string	broker	-
alter.config.policy.class.name	class	ro	-
alter.log.dirs.replication.quota.window.num	int	ro	11
alter.log.dirs.replication.quota.window.size.seconds	int	ro	1
authorizer.class.name	string	ro	""
auto.create.topics.enable	boolean	ro	true
auto.include.jmx.reporter	boolean	ro	true
auto.leader.rebalance.enable	boolean	ro	true
background.threads	int	cluster	10
broker.heartbeat.interval.ms	int	ro	2000
broker.id	int	ro	-1
broker.id.generation.enable	boolean	ro	true
broker.rack	string	ro	-
broker.session.timeout.ms	int	ro	9000
client.quota.callback.class	class	ro	-
compression.gzip.level	int	cluster	-1
compression.lz4.level	int	cluster	9
compression.type	string	cluster	producer
compression.zstd.level	int	cluster	3
connection.failed.authentication.delay.ms	int	ro	100
connections.max.idle.ms	long	ro	600000
connections.max.reauth.ms	long	ro	0
control.plane.listener.name	string	ro	-
controlled.shutdown.enable	boolean	ro	true
controlled.shutdown.max.retries	int	ro	3
controlled.shutdown.retry.backoff.ms	long	ro	5000
controller.listener.names	string	ro	-
controller.quorum.append.linger.ms	int	ro	25
controller.quorum.bootstrap.servers	list	ro	""
controller.quorum.election.backoff.max.ms	int	ro	1000
controller.quorum.election.timeout.ms	int	ro	1000
controller.quorum.fetch.timeout.ms	int	ro	2000
controller.quorum.request.timeout.ms	int	ro	2000
controller.quorum.retry.backoff.ms	int	ro	20
controller.quorum.voters	list	ro	""
controller.quota.window.num	int	ro	11
controller.quota.window.size.seconds	int	ro	1
controller.socket.timeout.ms	int	ro	30000
create.topic.policy.class.name	class	ro	-
default.replication.factor	int	ro	1
delegation.token.expiry.check.interval.ms	long	ro	3600000
delegation.token.expiry.time.ms	long	ro	86400000
delegation.token.master.key	password	ro	-
delegation.token.max.lifetime.ms	long	ro	604800000
delegation.token.secret.key	password	ro	-
delete.records.purgatory.purge.interval.requests	int	ro	1
delete.topic.enable	boolean	ro	true
early.start.listeners	string	ro	-
eligible.leader.replicas.enable	boolean	ro	false
fetch.max.bytes	int	ro	57671680
fetch.purgatory.purge.interval.requests	int	ro	1000
group.consumer.assignors	list	ro	org.apache.kafka.coordinator.group.assignor.UniformAssignor,org.apache.kafka.coordinator.group.assignor.RangeAssignor
group.consumer.heartbeat.interval.ms	int	ro	5000
group.consumer.max.heartbeat.interval.ms	int	ro	15000
group.consumer.max.session.timeout.ms	int	ro	60000
group.consumer.max.size	int	ro	2147483647
group.consumer.min.heartbeat.interval.ms	int	ro	5000
group.consumer.min.session.timeout.ms	int	ro	45000
group.consumer.session.timeout.ms	int	ro	45000
group.coordinator.append.linger.ms	int	ro	10
group.coordinator.rebalance.protocols	list	ro	classic
group.coordinator.threads	int	ro	1
group.initial.rebalance.delay.ms	int	ro	3000
group.max.session.timeout.ms	int	ro	1800000
group.max.size	int	ro	2147483647
group.min.session.timeout.ms	int	ro	6000
group.share.delivery.count.limit	int	ro	5
group.share.heartbeat.interval.ms	int	ro	5000
group.share.max.groups	short	ro	10
group.share.max.heartbeat.interval.ms	int	ro	15000
group.share.max.record.lock.duration.ms	int	ro	60000
group.share.max.session.timeout.ms	int	ro	60000
group.share.max.size	short	ro	200
group.share.min.heartbeat.interval.ms	int	ro	5000
group.share.min.record.lock.duration.ms	int	ro	15000
group.share.min.session.timeout.ms	int	ro	45000
group.share.partition.max.record.locks	int	ro	200
group.share.record.lock.duration.ms	int	ro	30000
group.share.session.timeout.ms	int	ro	45000
initial.broker.registration.timeout.ms	int	ro	60000
inter.broker.listener.name	string	ro	-
inter.broker.protocol.version	string	ro	3.9-IV0
kafka.metrics.polling.interval.secs	int	ro	10
kafka.metrics.reporters	list	ro	""
leader.imbalance.check.interval.seconds	long	ro	300
leader.imbalance.per.broker.percentage	int	ro	10
listener.security.protocol.map	string	broker	SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT
listeners	string	broker	PLAINTEXT://:9092
log.cleaner.backoff.ms	long	cluster	15000
log.cleaner.dedupe.buffer.size	long	cluster	134217728
log.cleaner.delete.retention.ms	long	cluster	86400000
log.cleaner.enable	boolean	ro	true
log.cleaner.io.buffer.load.factor	double	cluster	0.9
log.cleaner.io.buffer.size	int	cluster	524288
log.cleaner.io.max.bytes.per.second	double	cluster	1.7976931348623157E308
log.cleaner.max.compaction.lag.ms	long	cluster	9223372036854775807
log.cleaner.min.cleanable.ratio	double	cluster	0.5
log.cleaner.min.compaction.lag.ms	long	cluster	0
log.cleaner.threads	int	cluster	1
log.cleanup.policy	list	cluster	delete
log.dir	string	ro	/tmp/kafka-logs
log.dir.failure.timeout.ms	long	ro	30000
log.dirs	string	ro	-
log.flush.interval.messages	long	cluster	9223372036854775807
log.flush.interval.ms	long	cluster	-
log.flush.offset.checkpoint.interval.ms	int	ro	60000
log.flush.scheduler.interval.ms	long	ro	9223372036854775807
log.flush.start.offset.checkpoint.interval.ms	int	ro	60000
log.index.interval.bytes	int	cluster	4096
log.index.size.max.bytes	int	cluster	10485760
log.local.retention.bytes	long	cluster	-2
log.local.retention.ms	long	cluster	-2
log.message.downconversion.enable	boolean	cluster	true
log.message.format.version	string	ro	3.0-IV1
log.message.timestamp.after.max.ms	long	cluster	9223372036854775807
log.message.timestamp.before.max.ms	long	cluster	9223372036854775807
log.message.timestamp.difference.max.ms	long	cluster	9223372036854775807
log.message.timestamp.type	string	cluster	CreateTime
log.preallocate	boolean	cluster	false
log.retention.bytes	long	cluster	-1
log.retention.check.interval.ms	long	ro	300000
log.retention.hours	int	ro	168
log.retention.minutes	int	ro	-
log.retention.ms	long	cluster	-
log.roll.hours	int	ro	168
log.roll.jitter.hours	int	ro	0
log.roll.jitter.ms	long	cluster	-
log.roll.ms	long	cluster	-
log.segment.bytes	int	cluster	1073741824
log.segment.delete.delay.ms	long	cluster	60000
max.connection.creation.rate	int	cluster	2147483647
max.connections	int	cluster	2147483647
max.connections.per.ip	int	cluster	2147483647
max.connections.per.ip.overrides	string	cluster	""
max.incremental.fetch.session.cache.slots	int	ro	1000
max.request.partition.size.limit	int	ro	2000
message.max.bytes	int	cluster	1048588
metadata.log.dir	string	ro	-
metadata.log.max.record.bytes.between.snapshots	long	ro	20971520
metadata.log.max.snapshot.interval.ms	long	ro	3600000
metadata.log.segment.bytes	int	ro	1073741824
metadata.log.segment.ms	long	ro	604800000
metadata.max.idle.interval.ms	int	ro	500
metadata.max.retention.bytes	long	ro	104857600
metadata.max.retention.ms	long	ro	604800000
metric.reporters	list	cluster	""
metrics.num.samples	int	ro	2
metrics.recording.level	string	ro	INFO
metrics.sample.window.ms	long	ro	30000
min.insync.replicas	int	cluster	1
node.id	int	ro	-1
num.io.threads	int	cluster	8
num.network.threads	int	cluster	3
num.partitions	int	ro	1
num.recovery.threads.per.data.dir	int	cluster	1
num.replica.alter.log.dirs.threads	int	ro	-
num.replica.fetchers	int	cluster	1
offset.metadata.max.bytes	int	ro	4096
offsets.commit.required.acks	short	ro	-1
offsets.commit.timeout.ms	int	ro	5000
offsets.load.buffer.size	int	ro	5242880
offsets.retention.check.interval.ms	long	ro	600000
offsets.retention.minutes	int	ro	10080
offsets.topic.compression.codec	int	ro	0
offsets.topic.num.partitions	int	ro	50
offsets.topic.replication.factor	short	ro	3
offsets.topic.segment.bytes	int	ro	104857600
password.encoder.cipher.algorithm	string	ro	AES/CBC/PKCS5Padding
password.encoder.iterations	int	ro	4096
password.encoder.key.length	int	ro	128
password.encoder.keyfactory.algorithm	string	ro	-
password.encoder.old.secret	password	ro	-
password.encoder.secret	password	ro	-
principal.builder.class	class	broker	org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder
process.roles	list	ro	""
producer.id.expiration.ms	int	cluster	86400000
producer.purgatory.purge.interval.requests	int	ro	1000
queued.max.request.bytes	long	ro	-1
queued.max.requests	int	ro	500
quota.window.num	int	ro	11
quota.window.size.seconds	int	ro	1
remote.fetch.max.wait.ms	int	cluster	500
remote.log.index.file.cache.total.size.bytes	long	cluster	1073741824
remote.log.manager.copier.thread.pool.size	int	ro	-1
remote.log.manager.copy.max.bytes.per.second	long	cluster	9223372036854775807
remote.log.manager.copy.quota.window.num	int	ro	11
remote.log.manager.copy.quota.window.size.seconds	int	ro	1
remote.log.manager.expiration.thread.pool.size	int	ro	-1
remote.log.manager.fetch.max.bytes.per.second	long	cluster	9223372036854775807
remote.log.manager.fetch.quota.window.num	int	ro	11
remote.log.manager.fetch.quota.window.size.seconds	int	ro	1
remote.log.manager.task.interval.ms	long	ro	30000
remote.log.manager.thread.pool.size	int	ro	10
remote.log.metadata.custom.metadata.max.bytes	int	ro	128
remote.log.metadata.manager.class.name	string	ro	org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager
remote.log.metadata.manager.class.path	string	ro	-
remote.log.metadata.manager.impl.prefix	string	ro	rlmm.config.
remote.log.metadata.manager.listener.name	string	ro	-
remote.log.reader.max.pending.tasks	int	ro	100
remote.log.reader.threads	int	ro	10
remote.log.storage.manager.class.name	string	ro	-
remote.log.storage.manager.class.path	string	ro	-
remote.log.storage.manager.impl.prefix	string	ro	rsm.config.
remote.log.storage.system.enable	boolean	ro	false
replica.fetch.backoff.ms	int	ro	1000
replica.fetch.max.bytes	int	ro	1048576
replica.fetch.min.bytes	int	ro	1
replica.fetch.response.max.bytes	int	ro	10485760
replica.fetch.wait.max.ms	int	ro	500
replica.high.watermark.checkpoint.interval.ms	long	ro	5000
replica.lag.time.max.ms	long	ro	30000
replica.selector.class	string	ro	-
replica.socket.receive.buffer.bytes	int	ro	65536
replica.socket.timeout.ms	int	ro	30000
replication.quota.window.num	int	ro	11
replication.quota.window.size.seconds	int	ro	1
request.timeout.ms	int	ro	30000
reserved.broker.max.id	int	ro	1000
sasl.client.callback.handler.class	class	ro	-
sasl.enabled.mechanisms	list	broker	GSSAPI
sasl.jaas.config	password	broker	-
sasl.kerberos.kinit.cmd	string	broker	/usr/bin/kinit
sasl.kerberos.min.time.before.relogin	long	broker	60000
sasl.kerberos.principal.to.local.rules	list	broker	DEFAULT
sasl.kerberos.service.name	string	broker	-
sasl.kerberos.ticket.renew.jitter	double	broker	0.05
sasl.kerberos.ticket.renew.window.factor	double	broker	0.8
sasl.login.callback.handler.class	class	ro	-
sasl.login.class	class	ro	-
sasl.login.connect.timeout.ms	int	ro	-
sasl.login.read.timeout.ms	int	ro	-
sasl.login.refresh.buffer.seconds	short	broker	300
sasl.login.refresh.min.period.seconds	short	broker	60
sasl.login.refresh.window.factor	double	broker	0.8
sasl.login.refresh.window.jitter	double	broker	0.05
sasl.login.retry.backoff.max.ms	long	ro	10000
sasl.login.retry.backoff.ms	long	ro	100
sasl.mechanism.controller.protocol	string	ro	GSSAPI
sasl.mechanism.inter.broker.protocol	string	broker	GSSAPI
sasl.oauthbearer.clock.skew.seconds	int	ro	30
sasl.oauthbearer.expected.audience	list	ro	-
sasl.oauthbearer.expected.issuer	string	ro	-
sasl.oauthbearer.jwks.endpoint.refresh.ms	long	ro	3600000
sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms	long	ro	10000
sasl.oauthbearer.jwks.endpoint.retry.backoff.ms	long	ro	100
sasl.oauthbearer.jwks.endpoint.url	string	ro	-
sasl.oauthbearer.scope.claim.name	string	ro	scope
sasl.oauthbearer.sub.claim.name	string	ro	sub
sasl.oauthbearer.token.endpoint.url	string	ro	-
sasl.server.callback.handler.class	class	ro	-
sasl.server.max.receive.size	int	ro	524288
security.inter.broker.protocol	string	ro	PLAINTEXT
security.providers	string	ro	-
socket.connection.setup.timeout.max.ms	long	ro	30000
socket.connection.setup.timeout.ms	long	ro	10000
socket.listen.backlog.size	int	ro	50
socket.receive.buffer.bytes	int	ro	102400
socket.request.max.bytes	int	ro	104857600
socket.send.buffer.bytes	int	ro	102400
ssl.allow.dn.changes	boolean	ro	false
ssl.allow.san.changes	boolean	ro	false
ssl.cipher.suites	list	broker	""
ssl.client.auth	string	broker	none
ssl.enabled.protocols	list	broker	TLSv1.2
ssl.endpoint.identification.algorithm	string	broker	https
ssl.engine.factory.class	class	broker	-
ssl.key.password	password	broker	-
ssl.keymanager.algorithm	string	broker	SunX509
ssl.keystore.certificate.chain	password	broker	-
ssl.keystore.key	password	broker	-
ssl.keystore.location	string	broker	-
ssl.keystore.password	password	broker	-
ssl.keystore.type	string	broker	JKS
ssl.principal.mapping.rules	string	ro	DEFAULT
ssl.protocol	string	broker	TLSv1.2
ssl.provider	string	broker	-
ssl.secure.random.implementation	string	broker	-
ssl.trustmanager.algorithm	string	broker	PKIX
ssl.truststore.certificates	password	broker	-
ssl.truststore.location	string	broker	-
ssl.truststore.password	password	broker	-
ssl.truststore.type	string	broker	JKS
telemetry.max.bytes	int	ro	1048576
transaction.abort.timed.out.transaction.cleanup.interval.ms	int	ro	10000
transaction.max.timeout.ms	int	ro	900000
transaction.partition.verification.enable	boolean	cluster	true
transaction.remove.expired.transaction.cleanup.interval.ms	int	ro	3600000
transaction.state.log.load.buffer.size	int	ro	5242880
transaction.state.log.min.isr	int	ro	2
transaction.state.log.num.partitions	int	ro	50
transaction.state.log.replication.factor	short	ro	3
transaction.state.log.segment.bytes	int	ro	104857600
transactional.id.expiration.ms	int	ro	604800000
unclean.leader.election.enable	boolean	cluster	false
zookeeper.clientCnxnSocket	string	ro	-
zookeeper.connect	string	ro	-
zookeeper.connection.timeout.ms	int	ro	-
zookeeper.max.in.flight.requests	int	ro	10
zookeeper.metadata.migration.enable	boolean	ro	false
zookeeper.session.timeout.ms	int	ro	18000
zookeeper.set.acl	boolean	ro	false
zookeeper.ssl.cipher.suites	list	ro	-
zookeeper.ssl.client.enable	boolean	ro	false
zookeeper.ssl.crl.enable	boolean	ro	false
zookeeper.ssl.enabled.protocols	list	ro	-
zookeeper.ssl.endpoint.identification.algorithm	string	ro	HTTPS
zookeeper.ssl.keystore.location	string	ro	-
zookeeper.ssl.keystore.password	password	ro	-
zookeeper.ssl.keystore.type	string	ro	-
zookeeper.ssl.ocsp.enable	boolean	ro	false
zookeeper.ssl.protocol	string	ro	TLSv1.2
zookeeper.ssl.truststore.location	string	ro	-
zookeeper.ssl.truststore.password	password	ro	-
zookeeper.ssl.truststore.type	string	ro	-
"""


def _row(line: str) -> KafkaBrokerConfig:
    name, typ, mode, default = line.split("\t")
    value = None if default == "-" else "" if default == '""' else default
    return KafkaBrokerConfig(name, typ, mode, value)


KAFKA_39_BROKER: dict[str, KafkaBrokerConfig] = {r.name: r for r in map(_row, _TABLE.strip().splitlines())}
KAFKA_39_BROKER_CONFIGS = frozenset(KAFKA_39_BROKER) | frozenset((
    # the authorizer's own settings (StandardAuthorizer / AclAuthorizer), read from the broker's properties
    "super.users", "allow.everyone.if.no.acl.found"))
#: the configs Kafka 3.9 can change without a restart (AlterConfigs / IncrementalAlterConfigs of BROKER)
KAFKA_39_DYNAMIC_BROKER_CONFIGS = frozenset(n for n, r in KAFKA_39_BROKER.items() if r.dynamic)
