package main

// franz-go (github.com/twmb/franz-go): kgo for producing and consuming, kadm for admin.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var franzOps = map[string]op{
	"produce":           franzProduce,
	"consume":           franzConsume,
	"group_consume":     franzGroupConsume,
	"txn_batches":       franzTxnBatches,
	"metadata":          franzMetadata,
	"create_topic":      franzCreateTopic,
	"delete_topic":      franzDeleteTopic,
	"create_partitions": franzCreatePartitions,
	"describe_config":   franzDescribeConfig,
	"alter_config":      franzAlterConfig,
	"list_offsets":      franzListOffsets,
}

func franzCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("unknown codec %q", name)
}

func franzRecord(topic string, r rec) *kgo.Record {
	kr := &kgo.Record{Topic: topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: fromMs(r.Timestamp)}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return kr
}

func franzRec(r *kgo.Record) rec {
	out := rec{Key: r.Key, Value: r.Value, Timestamp: ms(r.Timestamp), Partition: r.Partition, Offset: r.Offset}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, header{h.Key, h.Value})
	}
	return out
}

func franzIsolation(c cmd) kgo.Opt {
	if c.str("isolation") == "read_committed" || c.strMap("config")["isolation.level"] == "read_committed" {
		return kgo.FetchIsolationLevel(kgo.ReadCommitted())
	}
	return kgo.FetchIsolationLevel(kgo.ReadUncommitted())
}

func franzProduce(c cmd) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout()+10*time.Second)
	defer cancel()
	codec, err := franzCodec(c.str("compression"))
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{kgo.SeedBrokers(brokers(c)...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(5 * time.Millisecond)}
	// no RecordDeliveryTimeout: franz-go measures it from each record's own Timestamp (sink.go isTimedOut), so
	// records with explicit past timestamps would time out at once; the context bounds the wait instead
	switch c.str("acks") {
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	}
	if v, ok := c["idempotent"].(bool); ok && !v {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if c.has("max_request_bytes") {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(c.num("max_request_bytes", 0))))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	recs := c.records()
	krs := make([]*kgo.Record, len(recs))
	errs := make([]error, len(recs))
	for i, r := range recs {
		krs[i] = franzRecord(c.str("topic"), r)
		i := i
		cl.Produce(ctx, krs[i], func(_ *kgo.Record, err error) { errs[i] = err })
	}
	if err := cl.Flush(ctx); err != nil {
		return nil, err
	}
	offsets := []any{}
	for i, kr := range krs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		offsets = append(offsets, []any{kr.Partition, kr.Offset})
	}
	return map[string]any{"offsets": offsets}, nil
}

func franzStart(c cmd) kgo.Offset {
	if n, ok := c["start"].(interface{ Int64() (int64, error) }); ok {
		v, _ := n.Int64()
		return kgo.NewOffset().At(v)
	}
	return kgo.NewOffset().AtStart()
}

func franzConsume(c cmd) (map[string]any, error) {
	topic := c.str("topic")
	parts := map[int32]kgo.Offset{}
	for _, p := range c.ints("partitions") {
		parts[p] = franzStart(c)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(brokers(c)...), kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}), franzIsolation(c)}
	if c.has("max_fetch_bytes") {
		m := int32(c.num("max_fetch_bytes", 0))
		opts = append(opts, kgo.FetchMaxPartitionBytes(m), kgo.FetchMaxBytes(2*m))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
	defer cancel()
	count := int(c.num("count", 0))
	out := []rec{}
	for len(out) < count && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				return nil, fmt.Errorf("fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, franzRec(r)) })
	}
	return map[string]any{"records": recsJSON(out)}, nil
}

// franzGroupConsume: a member of c.group subscribed to c.topic, reading from the start, committing after
// every poll that returned records, until c.count distinct records or the timeout; commits and leaves.
// config group.protocol=consumer opts into KIP-848 (ServerSideBalancer with the range balancer).
func franzGroupConsume(c cmd) (map[string]any, error) {
	t0 := time.Now()
	opts := []kgo.Opt{kgo.SeedBrokers(brokers(c)...), kgo.ConsumerGroup(c.str("group")),
		kgo.ConsumeTopics(c.str("topic")), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(200 * time.Millisecond), franzIsolation(c)}
	if c.strMap("config")["group.protocol"] == "consumer" {
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
	defer cancel()
	count := int(c.num("count", 0))
	out := []rec{}
	seen := map[[2]int64]bool{}
	firstMs := int64(-1)
	for len(seen) < count && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				return nil, fmt.Errorf("fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			if firstMs < 0 {
				firstMs = time.Since(t0).Milliseconds()
			}
			out = append(out, franzRec(r))
			seen[[2]int64{int64(r.Partition), r.Offset}] = true
			n++
		})
		if n > 0 {
			// a commit that fails while the coordinator moves or its broker is down (franz-go returns the dial
			// error) leaves the offsets uncommitted: the next commit carries them, as an application would do
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				fmt.Fprintf(os.Stderr, "franz-go group_consume: commit failed, retried with the next one: %v\n", err)
			}
		}
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	for { // the final commit is retried until it succeeds or 30 s pass
		err := cl.CommitUncommittedOffsets(cctx)
		if err == nil {
			break
		}
		if cctx.Err() != nil {
			return nil, fmt.Errorf("final commit: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cl.LeaveGroup()
	return map[string]any{"records": recsJSON(out), "first_ms": firstMs}, nil
}

// franzTxnBatches: one transactional producer; each batch of records is one transaction, committed or
// aborted as the batch says (the records are flushed, i.e. in the log, before the transaction ends).
func franzTxnBatches(c cmd) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers(c)...), kgo.TransactionalID(c.str("transactional_id")),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	for _, b := range c["batches"].([]any) {
		batch := cmd(b.(map[string]any))
		if err := cl.BeginTransaction(); err != nil {
			return nil, fmt.Errorf("begin: %w", err)
		}
		for _, r := range batch.records() {
			if err := cl.ProduceSync(ctx, franzRecord(c.str("topic"), r)).FirstErr(); err != nil {
				return nil, fmt.Errorf("produce: %w", err)
			}
		}
		if err := cl.Flush(ctx); err != nil {
			return nil, err
		}
		end := kgo.TryAbort
		if batch.boolean("commit") {
			end = kgo.TryCommit
		}
		if err := cl.EndTransaction(ctx, end); err != nil {
			return nil, fmt.Errorf("end transaction: %w", err)
		}
	}
	return nil, nil
}

func franzAdmin(c cmd) (*kadm.Client, context.Context, func(), error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers(c)...))
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	return kadm.NewClient(cl), ctx, func() { cancel(); cl.Close() }, nil
}

func franzMetadata(c cmd) (map[string]any, error) {
	adm, ctx, done, err := franzAdmin(c)
	if err != nil {
		return nil, err
	}
	defer done()
	m, err := adm.Metadata(ctx, c.strs("topics")...)
	if err != nil {
		return nil, err
	}
	brokers := []any{}
	for _, b := range m.Brokers {
		brokers = append(brokers, []any{b.NodeID, b.Host, b.Port})
	}
	topics := map[string]any{}
	for name, t := range m.Topics {
		if t.Err == nil {
			topics[name] = len(t.Partitions)
		}
	}
	return map[string]any{"brokers": brokers, "topics": topics, "cluster_id": m.Cluster}, nil
}

func franzCreateTopic(c cmd) (map[string]any, error) {
	adm, ctx, done, err := franzAdmin(c)
	if err != nil {
		return nil, err
	}
	defer done()
	cfg := map[string]*string{}
	for k, v := range c.strMap("topic_config") {
		v := v
		cfg[k] = &v
	}
	resp, err := adm.CreateTopic(ctx, int32(c.num("partitions", 1)), 1, cfg, c.str("topic"))
	if err != nil {
		return nil, err
	}
	return nil, resp.Err
}

func franzDeleteTopic(c cmd) (map[string]any, error) {
	adm, ctx, done, err := franzAdmin(c)
	if err != nil {
		return nil, err
	}
	defer done()
	resp, err := adm.DeleteTopics(ctx, c.str("topic"))
	if err != nil {
		return nil, err
	}
	return nil, resp.Error()
}

func franzCreatePartitions(c cmd) (map[string]any, error) {
	adm, ctx, done, err := franzAdmin(c)
	if err != nil {
		return nil, err
	}
	defer done()
	resp, err := adm.UpdatePartitions(ctx, int(c.num("total", 0)), c.str("topic"))
	if err != nil {
		return nil, err
	}
	return nil, resp.Error()
}

func franzDescribeConfig(c cmd) (map[string]any, error) {
	adm, ctx, done, err := franzAdmin(c)
	if err != nil {
		return nil, err
	}
	defer done()
	rcs, err := adm.DescribeTopicConfigs(ctx, c.str("topic"))
	if err != nil {
		return nil, err
	}
	rc, err := rcs.On(c.str("topic"), nil)
	if err != nil {
		return nil, err
	}
	if rc.Err != nil {
		return nil, rc.Err
	}
	out := map[string]any{}
	for _, e := range rc.Configs {
		if e.Value == nil {
			out[e.Key] = nil
		} else {
			out[e.Key] = *e.Value
		}
	}
	return map[string]any{"config": out}, nil
}

func franzAlterConfig(c cmd) (map[string]any, error) {
	adm, ctx, done, err := franzAdmin(c)
	if err != nil {
		return nil, err
	}
	defer done()
	var alters []kadm.AlterConfig
	for k, v := range c.strMap("topic_config") {
		v := v
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	resps, err := adm.AlterTopicConfigs(ctx, alters, c.str("topic"))
	if err != nil {
		return nil, err
	}
	for _, r := range resps {
		if r.Err != nil {
			return nil, r.Err
		}
	}
	return nil, nil
}

// franzListOffsets: kadm's ListStartOffsets / ListEndOffsets / ListOffsetsAfterMilli (which answers the end
// offset, not -1, for a timestamp after the last record: kadm asks again for the end offset).
func franzListOffsets(c cmd) (map[string]any, error) {
	adm, ctx, done, err := franzAdmin(c)
	if err != nil {
		return nil, err
	}
	defer done()
	topic := c.str("topic")
	var lo kadm.ListedOffsets
	switch c.str("spec") {
	case "earliest":
		lo, err = adm.ListStartOffsets(ctx, topic)
	case "latest":
		lo, err = adm.ListEndOffsets(ctx, topic)
	default:
		lo, err = adm.ListOffsetsAfterMilli(ctx, c.num("spec", 0), topic)
	}
	if err != nil {
		return nil, err
	}
	o, ok := lo.Lookup(topic, int32(c.num("partition", 0)))
	if !ok {
		return nil, fmt.Errorf("no offset for %s[%d]", topic, c.num("partition", 0))
	}
	if o.Err != nil {
		return nil, o.Err
	}
	return map[string]any{"offset": o.Offset}, nil
}
