//! The rdkafka crate (librdkafka): FutureProducer, BaseConsumer (assign or subscribe), AdminClient.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, AlterConfig, NewPartitions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{BorrowedMessage, Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::{json, Map, Value};

use crate::{obj, rec_from, rec_json, Cmd, Rec, Res};

pub fn handle(rt: &tokio::runtime::Runtime, c: &Value) -> Res {
    match c.s("op") {
        "produce" => produce(rt, c),
        "consume" => consume(c),
        "group_consume" => group_consume(c),
        "txn_batches" => txn_batches(rt, c),
        "metadata" => metadata(c),
        "create_topic" => create_topic(rt, c),
        "delete_topic" => delete_topic(rt, c),
        "create_partitions" => create_partitions(rt, c),
        "describe_config" => describe_config(rt, c),
        "alter_config" => alter_config(rt, c),
        "list_offsets" => list_offsets(c),
        op => Err(format!("unknown op {op}")),
    }
}

fn e<E: std::fmt::Display>(err: E) -> String {
    err.to_string()
}

fn base(c: &Value) -> ClientConfig {
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", c.s("bootstrap"));
    cfg.set("client.id", "kafkalite-compat");
    for (k, v) in c.str_map("config") {
        cfg.set(k, v);
    }
    cfg
}

fn headers(r: &Rec) -> Option<OwnedHeaders> {
    if r.headers.is_empty() {
        return None;
    }
    let mut h = OwnedHeaders::new_with_capacity(r.headers.len());
    for (k, v) in &r.headers {
        h = h.insert(Header { key: k, value: v.as_ref() });
    }
    Some(h)
}

fn record<'a>(topic: &'a str, r: &'a Rec) -> FutureRecord<'a, Vec<u8>, Vec<u8>> {
    let mut fr = FutureRecord::to(topic).partition(r.partition);
    if let Some(k) = &r.key {
        fr = fr.key(k);
    }
    if let Some(v) = &r.value {
        fr = fr.payload(v);
    }
    if let Some(ts) = r.timestamp {
        fr = fr.timestamp(ts);
    }
    if let Some(h) = headers(r) {
        fr = fr.headers(h);
    }
    fr
}

fn from_message(m: &BorrowedMessage<'_>) -> Rec {
    let headers = m
        .headers()
        .map(|hs| hs.iter().map(|h| (h.key.to_string(), h.value.map(|v| v.to_vec()))).collect())
        .unwrap_or_default();
    Rec {
        key: m.key().map(|k| k.to_vec()),
        value: m.payload().map(|v| v.to_vec()),
        headers,
        timestamp: m.timestamp().to_millis(),
        partition: m.partition(),
        offset: m.offset(),
    }
}

/// Sends every record (enqueue all, then wait for every delivery report); QueueFull waits a moment.
fn send_all(rt: &tokio::runtime::Runtime, p: &FutureProducer, topic: &str, recs: &[Rec]) -> Result<Vec<Value>, String> {
    let mut futs = Vec::with_capacity(recs.len());
    for r in recs {
        let mut fr = record(topic, r);
        loop {
            match p.send_result(fr) {
                Ok(f) => break futs.push(f),
                Err((KafkaError::MessageProduction(rdkafka::types::RDKafkaErrorCode::QueueFull), back)) => {
                    fr = back;
                    p.poll(Duration::from_millis(50));
                }
                Err((err, _)) => return Err(e(err)),
            }
        }
    }
    rt.block_on(async {
        let mut offsets = Vec::with_capacity(futs.len());
        for f in futs {
            match f.await {
                Ok(Ok(d)) => offsets.push(json!([d.partition, d.offset])),
                Ok(Err((err, _))) => return Err(e(err)),
                Err(_) => return Err("delivery canceled".to_string()),
            }
        }
        Ok(offsets)
    })
}

fn produce(rt: &tokio::runtime::Runtime, c: &Value) -> Res {
    let mut cfg = base(c);
    cfg.set("linger.ms", "5")
        .set("compression.type", match c.s("compression") { "" => "none", x => x })
        .set("acks", match c.s("acks") { "" => "all", x => x })
        .set("message.timeout.ms", c.timeout_ms().to_string());
    if let Some(i) = c["idempotent"].as_bool() {
        cfg.set("enable.idempotence", i.to_string());
    }
    if let Some(m) = c["max_request_bytes"].as_i64() {
        cfg.set("message.max.bytes", m.to_string());
    }
    let p: FutureProducer = cfg.create().map_err(e)?;
    let offsets = send_all(rt, &p, c.s("topic"), &c.records())?;
    Ok(obj(json!({"offsets": offsets})))
}

fn consumer_config(c: &Value) -> ClientConfig {
    let mut cfg = base(c);
    cfg.set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "200")
        .set("isolation.level", if c.isolation_committed() { "read_committed" } else { "read_uncommitted" });
    if let Some(m) = c["max_fetch_bytes"].as_i64() {
        cfg.set("max.partition.fetch.bytes", m.to_string()).set("fetch.max.bytes", (2 * m).to_string());
    }
    cfg
}

fn consume(c: &Value) -> Res {
    let mut cfg = consumer_config(c);
    cfg.set("group.id", format!("compat-rdkafka-{}", std::process::id()));
    let cons: BaseConsumer = cfg.create().map_err(e)?;
    let topic = c.s("topic");
    let start = match c["start"].as_i64() {
        Some(n) => Offset::Offset(n),
        None => Offset::Beginning,
    };
    let mut tpl = TopicPartitionList::new();
    for p in c.ints("partitions") {
        tpl.add_partition_offset(topic, p, start).map_err(e)?;
    }
    cons.assign(&tpl).map_err(e)?;
    let count = c.n("count", 0) as usize;
    let deadline = Instant::now() + Duration::from_millis(c.timeout_ms());
    let mut out = Vec::new();
    while out.len() < count && Instant::now() < deadline {
        match cons.poll(Duration::from_millis(200)) {
            None => {}
            Some(Err(err)) => transient(err)?,
            Some(Ok(m)) => out.push(rec_json(&from_message(&m))),
        }
    }
    Ok(obj(json!({"records": out})))
}

/// A subscribed member of c.group reading c.topic from the beginning, committing synchronously after every
/// record it got, until c.count distinct records or the timeout; then it closes (leaves the group).
/// config group.protocol=consumer makes it a KIP-848 member.
fn group_consume(c: &Value) -> Res {
    let t0 = Instant::now();
    let mut cfg = consumer_config(c);
    cfg.set("group.id", c.s("group"));
    let cons: BaseConsumer = cfg.create().map_err(e)?;
    cons.subscribe(&[c.s("topic")]).map_err(e)?;
    let count = c.n("count", 0) as usize;
    let deadline = t0 + Duration::from_millis(c.timeout_ms());
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut first_ms: i64 = -1;
    while seen.len() < count && Instant::now() < deadline {
        match cons.poll(Duration::from_millis(200)) {
            None => {}
            Some(Err(err)) => transient(err)?,
            Some(Ok(m)) => {
                if first_ms < 0 {
                    first_ms = t0.elapsed().as_millis() as i64;
                }
                let r = from_message(&m);
                seen.insert((r.partition, r.offset));
                out.push(rec_json(&r));
                commit(&cons, &m)?;
            }
        }
    }
    cons.unsubscribe();
    Ok(obj(json!({"records": out, "first_ms": first_ms})))
}

/// librdkafka reports a broker going away (transport failure, all brokers down) through the consumer's poll as
/// an error it recovers from itself: logged, not fatal. Anything else ends the command.
fn transient(err: KafkaError) -> Result<(), String> {
    use rdkafka::types::RDKafkaErrorCode::*;
    match err.rdkafka_error_code() {
        Some(BrokerTransportFailure | AllBrokersDown | NotCoordinator | CoordinatorNotAvailable) => {
            eprintln!("rdkafka consumer (continuing): {err}");
            Ok(())
        }
        _ => Err(e(err)),
    }
}

/// A synchronous commit of one message's offset, retried (for 10 s) while the group's coordinator moves.
fn commit(cons: &BaseConsumer, m: &BorrowedMessage<'_>) -> Result<(), String> {
    let mut attempt = 0;
    loop {
        match cons.commit_message(m, CommitMode::Sync) {
            Ok(()) => return Ok(()),
            Err(err) if attempt < 50 && transient_code(&err) => {
                eprintln!("rdkafka commit (retrying): {err}");
                attempt += 1;
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(err) => return Err(format!("commit: {err}")),
        }
    }
}

fn transient_code(err: &KafkaError) -> bool {
    use rdkafka::types::RDKafkaErrorCode::*;
    matches!(err.rdkafka_error_code(),
             Some(BrokerTransportFailure | AllBrokersDown | NotCoordinator | CoordinatorNotAvailable
                  | CoordinatorLoadInProgress | RequestTimedOut))
}

fn txn_batches(rt: &tokio::runtime::Runtime, c: &Value) -> Res {
    let mut cfg = base(c);
    cfg.set("transactional.id", c.s("transactional_id")).set("linger.ms", "5");
    let p: FutureProducer = cfg.create().map_err(e)?;
    let t = Duration::from_millis(c.timeout_ms());
    p.init_transactions(t).map_err(|err| format!("init_transactions: {err}"))?;
    for b in c["batches"].as_array().cloned().unwrap_or_default() {
        p.begin_transaction().map_err(|err| format!("begin: {err}"))?;
        let recs: Vec<Rec> = b["records"].as_array().map(|a| a.iter().map(rec_from).collect()).unwrap_or_default();
        send_all(rt, &p, c.s("topic"), &recs)?;
        if b["commit"].as_bool() == Some(true) {
            p.commit_transaction(t).map_err(|err| format!("commit: {err}"))?;
        } else {
            p.abort_transaction(t).map_err(|err| format!("abort: {err}"))?;
        }
    }
    Ok(Map::new())
}

fn metadata(c: &Value) -> Res {
    let cons: BaseConsumer = base(c).create().map_err(e)?;
    let t = Duration::from_secs(30);
    let wanted: Option<Vec<String>> =
        c["topics"].as_array().map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect());
    let mut topics = Map::new();
    let md = cons.fetch_metadata(None, t).map_err(e)?;
    let brokers: Vec<Value> = md.brokers().iter().map(|b| json!([b.id(), b.host(), b.port()])).collect();
    let mut fetch = |name: Option<&str>| -> Result<(), String> {
        let md = cons.fetch_metadata(name, t).map_err(e)?;
        for tm in md.topics() {
            if tm.error().is_none() {
                topics.insert(tm.name().to_string(), json!(tm.partitions().len()));
            }
        }
        Ok(())
    };
    match &wanted {
        None => fetch(None)?,
        Some(names) => {
            for n in names {
                fetch(Some(n))?;
            }
        }
    }
    let cluster_id = cons.client().fetch_cluster_id(t);
    Ok(obj(json!({"brokers": brokers, "topics": topics, "cluster_id": cluster_id})))
}

fn admin(c: &Value) -> Result<(AdminClient<DefaultClientContext>, AdminOptions), String> {
    let a: AdminClient<DefaultClientContext> = base(c).create().map_err(e)?;
    let opts = AdminOptions::new().request_timeout(Some(Duration::from_secs(30))).operation_timeout(Some(Duration::from_secs(30)));
    Ok((a, opts))
}

fn one<T>(results: Vec<Result<T, (String, rdkafka::types::RDKafkaErrorCode)>>) -> Result<(), String> {
    for r in results {
        if let Err((name, code)) = r {
            return Err(format!("{name}: {code:?} ({code})"));
        }
    }
    Ok(())
}

fn create_topic(rt: &tokio::runtime::Runtime, c: &Value) -> Res {
    let (a, opts) = admin(c)?;
    let cfg = c.str_map("topic_config");
    let mut nt = NewTopic::new(c.s("topic"), c.n("partitions", 1) as i32, TopicReplication::Fixed(1));
    for (k, v) in &cfg {
        nt = nt.set(k, v);
    }
    one(rt.block_on(a.create_topics([&nt], &opts)).map_err(e)?)?;
    Ok(Map::new())
}

fn delete_topic(rt: &tokio::runtime::Runtime, c: &Value) -> Res {
    let (a, opts) = admin(c)?;
    one(rt.block_on(a.delete_topics(&[c.s("topic")], &opts)).map_err(e)?)?;
    Ok(Map::new())
}

fn create_partitions(rt: &tokio::runtime::Runtime, c: &Value) -> Res {
    let (a, opts) = admin(c)?;
    let np = NewPartitions::new(c.s("topic"), c.n("total", 0) as usize);
    one(rt.block_on(a.create_partitions([&np], &opts)).map_err(e)?)?;
    Ok(Map::new())
}

fn describe_config(rt: &tokio::runtime::Runtime, c: &Value) -> Res {
    let (a, opts) = admin(c)?;
    let res = rt.block_on(a.describe_configs([&ResourceSpecifier::Topic(c.s("topic"))], &opts)).map_err(e)?;
    let mut out = Map::new();
    for r in res {
        let r = r.map_err(|code| format!("{code:?} ({code})"))?;
        for entry in r.entries {
            out.insert(entry.name, entry.value.map(Value::String).unwrap_or(Value::Null));
        }
    }
    Ok(obj(json!({"config": out})))
}

/// rdkafka's AlterConfigs is the non-incremental API (every dynamic config of the topic replaced by the
/// request's): the current topic-level overrides are described first and sent again with the changes.
fn alter_config(rt: &tokio::runtime::Runtime, c: &Value) -> Res {
    let (a, opts) = admin(c)?;
    let topic = c.s("topic");
    let res = rt.block_on(a.describe_configs([&ResourceSpecifier::Topic(topic)], &opts)).map_err(e)?;
    let mut current: Vec<(String, String)> = Vec::new();
    for r in res {
        let r = r.map_err(|code| format!("{code:?} ({code})"))?;
        for entry in r.entries {
            if matches!(entry.source, rdkafka::admin::ConfigSource::DynamicTopic) {
                if let Some(v) = entry.value {
                    current.push((entry.name, v));
                }
            }
        }
    }
    let changes = c.str_map("topic_config");
    current.retain(|(k, _)| !changes.iter().any(|(ck, _)| ck == k));
    current.extend(changes);
    let mut ac = AlterConfig::new(ResourceSpecifier::Topic(topic));
    for (k, v) in &current {
        ac = ac.set(k, v);
    }
    for r in rt.block_on(a.alter_configs([&ac], &opts)).map_err(e)? {
        r.map_err(|(_, code)| format!("{code:?} ({code})"))?;
    }
    Ok(Map::new())
}

/// earliest/latest: fetch_watermarks; a timestamp: offsets_for_times (librdkafka's "no such offset" is
/// Offset::End, reported as -1 as Kafka's ListOffsets says).
fn list_offsets(c: &Value) -> Res {
    let cons: BaseConsumer = base(c).create().map_err(e)?;
    let t = Duration::from_secs(30);
    let topic = c.s("topic");
    let p = c.n("partition", 0) as i32;
    let offset = match c["spec"].as_str() {
        Some("earliest") => cons.fetch_watermarks(topic, p, t).map_err(e)?.0,
        Some("latest") => cons.fetch_watermarks(topic, p, t).map_err(e)?.1,
        _ => {
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition_offset(topic, p, Offset::Offset(c.n("spec", 0))).map_err(e)?;
            let got = cons.offsets_for_times(tpl, t).map_err(e)?;
            let el = got.find_partition(topic, p).ok_or("partition missing from the answer")?;
            el.error().map_err(e)?;
            match el.offset() {
                Offset::Offset(n) => n,
                Offset::End => -1,
                other => return Err(format!("unexpected offset {other:?}")),
            }
        }
    };
    Ok(obj(json!({"offset": offset})))
}
