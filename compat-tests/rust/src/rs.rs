//! rskafka (pure Rust): a PartitionClient per partition (produce, fetch_records, get_offset) and the
//! ControllerClient (create/delete topic). Headers are a BTreeMap (unique names, sorted, no null values).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use rskafka::client::partition::{Compression, OffsetAt, UnknownTopicHandling};
use rskafka::client::{Client, ClientBuilder};
use rskafka::record::Record;
use serde_json::{json, Map, Value};

use crate::{obj, rec_json, Cmd, Rec, Res};

pub fn handle(rt: &tokio::runtime::Runtime, c: &Value) -> Res {
    rt.block_on(async {
        match c.s("op") {
            "produce" => produce(c).await,
            "consume" => consume(c).await,
            "metadata" => metadata(c).await,
            "create_topic" => create_topic(c).await,
            "delete_topic" => delete_topic(c).await,
            "list_offsets" => list_offsets(c).await,
            op => Err(format!("rskafka has no {op}")),
        }
    })
}

fn e<E: std::fmt::Display>(err: E) -> String {
    err.to_string()
}

async fn client(c: &Value) -> Result<Client, String> {
    let mut b = ClientBuilder::new(c.s("bootstrap").split(',').map(str::to_string).collect()).client_id("kafkalite-compat");
    if let Some(m) = c["max_request_bytes"].as_i64().or(c["max_fetch_bytes"].as_i64()) {
        b = b.max_message_size(2 * m as usize + 1024);
    }
    tokio::time::timeout(Duration::from_secs(30), b.build()).await.map_err(|_| "connect timed out".to_string())?.map_err(e)
}

fn codec(name: &str) -> Result<Compression, String> {
    Ok(match name {
        "" | "none" => Compression::NoCompression,
        "gzip" => Compression::Gzip,
        "snappy" => Compression::Snappy,
        "lz4" => Compression::Lz4,
        "zstd" => Compression::Zstd,
        other => return Err(format!("unknown codec {other}")),
    })
}

fn to_record(r: &Rec) -> Result<Record, String> {
    let mut headers = BTreeMap::new();
    for (k, v) in &r.headers {
        let v = v.clone().ok_or("rskafka cannot send a null header value")?;
        if headers.insert(k.clone(), v).is_some() {
            return Err(format!("rskafka cannot send header {k} twice"));
        }
    }
    let timestamp = match r.timestamp {
        Some(ms) => Utc.timestamp_millis_opt(ms).single().ok_or("bad timestamp")?,
        None => Utc::now(),
    };
    Ok(Record { key: r.key.clone(), value: r.value.clone(), headers, timestamp })
}

/// Records grouped by partition (order kept), one produce call (one batch) per partition.
async fn produce(c: &Value) -> Res {
    if !matches!(c.s("acks"), "" | "all") {
        return Err("rskafka always produces with acks=all".into());
    }
    let cl = client(c).await?;
    let compression = codec(c.s("compression"))?;
    let recs = c.records();
    let mut by_part: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
    for (i, r) in recs.iter().enumerate() {
        by_part.entry(r.partition).or_default().push(i);
    }
    let mut offsets = vec![Value::Null; recs.len()];
    for (p, idxs) in by_part {
        let pc = cl.partition_client(c.s("topic"), p, UnknownTopicHandling::Retry).await.map_err(e)?;
        let batch = idxs.iter().map(|&i| to_record(&recs[i])).collect::<Result<Vec<_>, _>>()?;
        let got = tokio::time::timeout(Duration::from_millis(c.timeout_ms()), pc.produce(batch, compression))
            .await
            .map_err(|_| "produce timed out".to_string())?
            .map_err(e)?;
        for (&i, off) in idxs.iter().zip(got) {
            offsets[i] = json!([p, off]);
        }
    }
    Ok(obj(json!({"offsets": offsets})))
}

async fn consume(c: &Value) -> Res {
    if c.isolation_committed() {
        return Err("rskafka fetches read_uncommitted only".into());
    }
    let cl = client(c).await?;
    let count = c.n("count", 0) as usize;
    let deadline = Instant::now() + Duration::from_millis(c.timeout_ms());
    let max_bytes = c["max_fetch_bytes"].as_i64().unwrap_or(1 << 20) as i32;
    let mut parts = Vec::new();
    for p in c.ints("partitions") {
        let pc = cl.partition_client(c.s("topic"), p, UnknownTopicHandling::Retry).await.map_err(e)?;
        let start = match c["start"].as_i64() {
            Some(n) => n,
            None => pc.get_offset(OffsetAt::Earliest).await.map_err(e)?,
        };
        parts.push((p, pc, start));
    }
    let mut out = Vec::new();
    while out.len() < count && Instant::now() < deadline {
        for (p, pc, next) in parts.iter_mut() {
            let (recs, _hwm) = pc.fetch_records(*next, 1..max_bytes, 200).await.map_err(e)?;
            for ro in recs {
                let r = ro.record;
                let headers = r.headers.into_iter().map(|(k, v)| (k, Some(v))).collect();
                out.push(rec_json(&Rec {
                    key: r.key,
                    value: r.value,
                    headers,
                    timestamp: Some(r.timestamp.timestamp_millis()),
                    partition: *p,
                    offset: ro.offset,
                }));
                *next = ro.offset + 1;
            }
        }
    }
    Ok(obj(json!({"records": out})))
}

/// rskafka lists topics (Metadata) but exposes no broker list.
async fn metadata(c: &Value) -> Res {
    let cl = client(c).await?;
    let mut topics = Map::new();
    let wanted: Option<Vec<&str>> = c["topics"].as_array().map(|a| a.iter().filter_map(|x| x.as_str()).collect());
    for t in cl.list_topics().await.map_err(e)? {
        if wanted.as_ref().is_none_or(|w| w.contains(&t.name.as_str())) {
            topics.insert(t.name, json!(t.partitions.len()));
        }
    }
    Ok(obj(json!({"brokers": [], "topics": topics, "cluster_id": null})))
}

async fn create_topic(c: &Value) -> Res {
    if !c.str_map("topic_config").is_empty() {
        return Err("rskafka's create_topic takes no configs".into());
    }
    let cl = client(c).await?;
    let cc = cl.controller_client().map_err(e)?;
    cc.create_topic(c.s("topic"), c.n("partitions", 1) as i32, 1, 30_000).await.map_err(e)?;
    Ok(Map::new())
}

async fn delete_topic(c: &Value) -> Res {
    let cl = client(c).await?;
    let cc = cl.controller_client().map_err(e)?;
    cc.delete_topic(c.s("topic"), 30_000).await.map_err(e)?;
    Ok(Map::new())
}

async fn list_offsets(c: &Value) -> Res {
    let cl = client(c).await?;
    let pc = cl.partition_client(c.s("topic"), c.n("partition", 0) as i32, UnknownTopicHandling::Retry).await.map_err(e)?;
    let at = match c["spec"].as_str() {
        Some("earliest") => OffsetAt::Earliest,
        Some("latest") => OffsetAt::Latest,
        _ => OffsetAt::Timestamp(Utc.timestamp_millis_opt(c.n("spec", 0)).single().ok_or("bad timestamp")?),
    };
    Ok(obj(json!({"offset": pc.get_offset(at).await.map_err(e)?})))
}
