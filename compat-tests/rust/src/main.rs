//! kclients-rust: the compat tests' driver for two Rust Kafka clients, chosen by the first argument:
//! `rdkafka` (the rdkafka crate over librdkafka) or `rskafka` (pure Rust). It speaks the harness's JSON-lines
//! protocol (compat-tests/harness/clients/jsonproc.py): one command per stdin line, one reply per stdout
//! line, {"ok":true,...} or {"ok":false,"error":...}; keys, values and header values are base64 (null for a
//! Kafka null). Every command builds its own client from the command's settings.

mod rd;
mod rs;

use std::io::{BufRead, Write};

use base64::Engine;
use serde_json::{json, Map, Value};

pub type Res = Result<Map<String, Value>, String>;

/// A record as the harness sees it (harness/records.py Rec).
#[derive(Debug, Clone)]
pub struct Rec {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    pub timestamp: Option<i64>,
    pub partition: i32,
    pub offset: i64,
}

pub fn unb64(v: &Value) -> Option<Vec<u8>> {
    v.as_str().map(|s| base64::engine::general_purpose::STANDARD.decode(s).expect("base64"))
}

pub fn b64(b: &Option<Vec<u8>>) -> Value {
    match b {
        None => Value::Null,
        Some(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
    }
}

pub fn rec_from(v: &Value) -> Rec {
    let headers = v["headers"]
        .as_array()
        .map(|hs| hs.iter().map(|h| (h[0].as_str().unwrap_or("").to_string(), unb64(&h[1]))).collect())
        .unwrap_or_default();
    Rec {
        key: unb64(&v["key"]),
        value: unb64(&v["value"]),
        headers,
        timestamp: v["timestamp"].as_i64(),
        partition: v["partition"].as_i64().unwrap_or(0) as i32,
        offset: -1,
    }
}

pub fn rec_json(r: &Rec) -> Value {
    let hs: Vec<Value> = r.headers.iter().map(|(k, v)| json!([k, b64(v)])).collect();
    json!({"key": b64(&r.key), "value": b64(&r.value), "headers": hs, "timestamp": r.timestamp,
           "partition": r.partition, "offset": r.offset})
}

/// Helpers over a command object.
pub trait Cmd {
    fn s(&self, k: &str) -> &str;
    fn n(&self, k: &str, def: i64) -> i64;
    fn timeout_ms(&self) -> u64;
    fn records(&self) -> Vec<Rec>;
    fn ints(&self, k: &str) -> Vec<i32>;
    fn str_map(&self, k: &str) -> Vec<(String, String)>;
    fn isolation_committed(&self) -> bool;
}

impl Cmd for Value {
    fn s(&self, k: &str) -> &str {
        self[k].as_str().unwrap_or("")
    }
    fn n(&self, k: &str, def: i64) -> i64 {
        self[k].as_i64().unwrap_or(def)
    }
    fn timeout_ms(&self) -> u64 {
        self.n("timeout_ms", 60_000) as u64
    }
    fn records(&self) -> Vec<Rec> {
        self["records"].as_array().map(|a| a.iter().map(rec_from).collect()).unwrap_or_default()
    }
    fn ints(&self, k: &str) -> Vec<i32> {
        self[k].as_array().map(|a| a.iter().filter_map(|x| x.as_i64()).map(|x| x as i32).collect()).unwrap_or_default()
    }
    fn str_map(&self, k: &str) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self[k]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }
    fn isolation_committed(&self) -> bool {
        self.s("isolation") == "read_committed" || self["config"]["isolation.level"].as_str() == Some("read_committed")
    }
}

pub fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn main() {
    let lib = std::env::args().nth(1).unwrap_or_default();
    let handler: fn(&tokio::runtime::Runtime, &Value) -> Res = match lib.as_str() {
        "rdkafka" => rd::handle,
        "rskafka" => rs::handle,
        _ => {
            eprintln!("usage: kclients-rust rdkafka|rskafka");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(out, "{}", json!({"ok": true, "ready": true})).unwrap();
    out.flush().unwrap();
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = match line {
            Ok(l) => l,
            Err(_) => break,
        };
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Value>(&line) {
            Err(e) => json!({"ok": false, "error": format!("bad command: {e}")}),
            Ok(cmd) => {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(&rt, &cmd)));
                match r {
                    Ok(Ok(mut m)) => {
                        m.insert("ok".into(), Value::Bool(true));
                        Value::Object(m)
                    }
                    Ok(Err(e)) => json!({"ok": false, "error": e}),
                    Err(p) => {
                        let msg = p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        json!({"ok": false, "error": format!("panic: {msg}")})
                    }
                }
            }
        };
        writeln!(out, "{reply}").unwrap();
        out.flush().unwrap();
    }
}
