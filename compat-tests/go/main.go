// Command kclients-go is the compat tests' driver for three Go Kafka clients: franz-go, Sarama and
// segmentio/kafka-go, chosen by the first argument. It speaks the harness's JSON-lines protocol
// (compat-tests/harness/clients/jsonproc.py): one command per stdin line, one reply per stdout line,
// {"ok":true,...} or {"ok":false,"error":...}; records carry keys, values and header values as base64 (null
// for a Kafka null). Every command builds its own client from the command's settings.
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

// cmd is one decoded command line.
type cmd map[string]any

func (c cmd) str(k string) string {
	s, _ := c[k].(string)
	return s
}

func (c cmd) has(k string) bool { return c[k] != nil }

func (c cmd) num(k string, def int64) int64 {
	switch v := c[k].(type) {
	case json.Number:
		n, err := v.Int64()
		if err == nil {
			return n
		}
	case float64:
		return int64(v)
	}
	return def
}

func (c cmd) boolean(k string) bool {
	b, _ := c[k].(bool)
	return b
}

// timeout is the command's timeout_ms (default 60 s).
func (c cmd) timeout() time.Duration { return time.Duration(c.num("timeout_ms", 60000)) * time.Millisecond }

func (c cmd) strMap(k string) map[string]string {
	out := map[string]string{}
	if m, ok := c[k].(map[string]any); ok {
		for key, v := range m {
			out[key] = fmt.Sprint(v)
		}
	}
	return out
}

func (c cmd) ints(k string) []int32 {
	var out []int32
	if l, ok := c[k].([]any); ok {
		for _, v := range l {
			n, _ := v.(json.Number).Int64()
			out = append(out, int32(n))
		}
	}
	return out
}

func (c cmd) strs(k string) []string {
	var out []string
	if l, ok := c[k].([]any); ok {
		for _, v := range l {
			out = append(out, v.(string))
		}
	}
	return out
}

// header is one record header; a nil value is a Kafka null.
type header struct {
	Key   string
	Value []byte
}

// rec is a record as the harness sees it (harness/records.py Rec).
type rec struct {
	Key, Value []byte
	Headers    []header
	Timestamp  *int64 // epoch ms; nil on produce = let the client stamp it
	Partition  int32
	Offset     int64
}

func unb64(v any) []byte {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	if b == nil {
		b = []byte{}
	}
	return b
}

func b64(b []byte) any {
	if b == nil {
		return nil
	}
	return base64.StdEncoding.EncodeToString(b)
}

func (c cmd) records() []rec {
	var out []rec
	for _, o := range c["records"].([]any) {
		r := cmd(o.(map[string]any))
		x := rec{Key: unb64(r["key"]), Value: unb64(r["value"]), Partition: int32(r.num("partition", 0))}
		if r.has("timestamp") {
			ts := r.num("timestamp", 0)
			x.Timestamp = &ts
		}
		if hs, ok := r["headers"].([]any); ok {
			for _, h := range hs {
				hl := h.([]any)
				x.Headers = append(x.Headers, header{hl[0].(string), unb64(hl[1])})
			}
		}
		out = append(out, x)
	}
	return out
}

func (r rec) json() map[string]any {
	hs := []any{}
	for _, h := range r.Headers {
		hs = append(hs, []any{h.Key, b64(h.Value)})
	}
	var ts any
	if r.Timestamp != nil {
		ts = *r.Timestamp
	}
	return map[string]any{"key": b64(r.Key), "value": b64(r.Value), "headers": hs, "timestamp": ts,
		"partition": r.Partition, "offset": r.Offset}
}

func recsJSON(rs []rec) []any {
	out := make([]any, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.json())
	}
	return out
}

func ms(t time.Time) *int64 {
	v := t.UnixMilli()
	return &v
}

func fromMs(ts *int64) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return time.UnixMilli(*ts)
}

// op is one command handler; reply fields besides "ok".
type op func(c cmd) (map[string]any, error)

var libs = map[string]map[string]op{
	"franz-go": franzOps,
	"sarama":   saramaOps,
	"kafka-go": kafkaGoOps,
}

func main() {
	if len(os.Args) < 2 || libs[os.Args[1]] == nil {
		names := []string{}
		for n := range libs {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "usage: kclients-go %v\n", names)
		os.Exit(2)
	}
	ops := libs[os.Args[1]]
	log.SetOutput(os.Stderr)
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	out := json.NewEncoder(os.Stdout)
	_ = out.Encode(map[string]any{"ok": true, "ready": true})
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			_ = out.Encode(handle(ops, line))
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			log.Fatal(err)
		}
	}
}

func handle(ops map[string]op, line []byte) (reply map[string]any) {
	defer func() {
		if p := recover(); p != nil {
			reply = map[string]any{"ok": false, "error": fmt.Sprint("panic: ", p), "trace": string(debug.Stack())}
		}
	}()
	var c cmd
	dec := json.NewDecoder(bytesReader(line))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		return map[string]any{"ok": false, "error": err.Error()}
	}
	f := ops[c.str("op")]
	if f == nil {
		return map[string]any{"ok": false, "error": "unknown op " + c.str("op")}
	}
	res, err := f(c)
	if err != nil {
		return map[string]any{"ok": false, "error": fmt.Sprintf("%T: %v", err, err)}
	}
	if res == nil {
		res = map[string]any{}
	}
	res["ok"] = true
	return res
}

// brokers: the bootstrap list (comma-separated host:port pairs).
func brokers(c cmd) []string { return strings.Split(c.str("bootstrap"), ",") }
