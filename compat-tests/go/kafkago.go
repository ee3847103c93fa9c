package main

// segmentio/kafka-go: Writer (a balancer that routes each message to the partition the harness asked for; a
// Transport of its own per command, see kgoClient),
// Reader (one per assigned partition; with a GroupID for groups), Client for admin requests. kafka-go has no
// idempotent or transactional producer.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

var kafkaGoOps = map[string]op{
	"produce":           kgoProduce,
	"consume":           kgoConsume,
	"group_consume":     kgoGroupConsume,
	"metadata":          kgoMetadata,
	"create_topic":      kgoCreateTopic,
	"delete_topic":      kgoDeleteTopic,
	"create_partitions": kgoCreatePartitions,
	"describe_config":   kgoDescribeConfig,
	"alter_config":      kgoAlterConfig,
	"list_offsets":      kgoListOffsets,
}

// toPartition routes a message to the partition stored in its WriterData.
type toPartition struct{}

func (toPartition) Balance(msg kafka.Message, _ ...int) int { return int(msg.WriterData.(int32)) }

func kgoCodec(name string) (kafka.Compression, error) {
	switch name {
	case "", "none":
		return 0, nil
	case "gzip":
		return kafka.Gzip, nil
	case "snappy":
		return kafka.Snappy, nil
	case "lz4":
		return kafka.Lz4, nil
	case "zstd":
		return kafka.Zstd, nil
	}
	return 0, fmt.Errorf("unknown codec %q", name)
}

func kgoRec(m kafka.Message) rec {
	out := rec{Key: m.Key, Value: m.Value, Timestamp: ms(m.Time), Partition: int32(m.Partition), Offset: m.Offset}
	for _, h := range m.Headers {
		out.Headers = append(out.Headers, header{h.Key, h.Value})
	}
	return out
}

func kgoIsolation(c cmd) kafka.IsolationLevel {
	if c.str("isolation") == "read_committed" || c.strMap("config")["isolation.level"] == "read_committed" {
		return kafka.ReadCommitted
	}
	return kafka.ReadUncommitted
}

func kgoProduce(c cmd) (map[string]any, error) {
	codec, err := kgoCodec(c.str("compression"))
	if err != nil {
		return nil, err
	}
	acks := kafka.RequireAll
	switch c.str("acks") {
	case "0":
		acks = kafka.RequireNone
	case "1":
		acks = kafka.RequireOne
	}
	recs := c.records()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(brokers(c)...), Topic: c.str("topic"), Balancer: toPartition{}, Transport: tr,
		BatchTimeout: 5 * time.Millisecond, BatchSize: max(len(recs), 1), RequiredAcks: acks, Compression: codec,
		WriteTimeout: c.timeout(), ReadTimeout: c.timeout(), MaxAttempts: 10}
	if c.has("max_request_bytes") {
		w.BatchBytes = c.num("max_request_bytes", 0)
	}
	defer w.Close()
	msgs := make([]kafka.Message, 0, len(recs))
	for _, r := range recs {
		m := kafka.Message{Key: r.Key, Value: r.Value, Time: fromMs(r.Timestamp), WriterData: r.Partition}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		msgs = append(msgs, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		var we kafka.WriteErrors
		if errors.As(err, &we) {
			for _, e := range we {
				if e != nil {
					return nil, fmt.Errorf("%d of %d failed, first: %w", we.Count(), len(msgs), e)
				}
			}
		}
		return nil, err
	}
	return map[string]any{"offsets": []any{}}, nil
}

func kgoConsume(c cmd) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
	defer cancel()
	maxBytes := 10 << 20
	if c.has("max_fetch_bytes") {
		maxBytes = int(c.num("max_fetch_bytes", 0))
	}
	start := kafka.FirstOffset
	if c.str("start") != "earliest" {
		start = c.num("start", 0)
	}
	msgs := make(chan kafka.Message, 1024)
	errs := make(chan error, 16)
	for _, p := range c.ints("partitions") {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers(c), Topic: c.str("topic"),
			Partition: int(p), MinBytes: 1, MaxBytes: maxBytes, MaxWait: 200 * time.Millisecond,
			IsolationLevel: kgoIsolation(c)})
		defer r.Close()
		if err := r.SetOffset(start); err != nil {
			return nil, err
		}
		go func() {
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				msgs <- m
			}
		}()
	}
	count := int(c.num("count", 0))
	out := []rec{}
	for len(out) < count {
		select {
		case m := <-msgs:
			out = append(out, kgoRec(m))
		case e := <-errs:
			return nil, e
		case <-ctx.Done():
			return map[string]any{"records": recsJSON(out)}, nil
		}
	}
	return map[string]any{"records": recsJSON(out)}, nil
}

// kgoGroupConsume: a Reader with a GroupID reading c.topic from the first offset, committing each message
// synchronously (CommitInterval 0), until c.count distinct records or the timeout; Close leaves the group.
func kgoGroupConsume(c cmd) (map[string]any, error) {
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
	defer cancel()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers(c), GroupID: c.str("group"),
		Topic: c.str("topic"), StartOffset: kafka.FirstOffset, MinBytes: 1, MaxBytes: 10 << 20,
		MaxWait: 200 * time.Millisecond, IsolationLevel: kgoIsolation(c), HeartbeatInterval: time.Second,
		SessionTimeout: 10 * time.Second, ErrorLogger: kafka.LoggerFunc(log.Printf)})
	count := int(c.num("count", 0))
	out := []rec{}
	seen := map[[2]int64]bool{}
	firstMs := int64(-1)
	var failure error
	for len(seen) < count {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() == nil {
				failure = err
			}
			break
		}
		if firstMs < 0 {
			firstMs = time.Since(t0).Milliseconds()
		}
		out = append(out, kgoRec(m))
		seen[[2]int64{int64(m.Partition), m.Offset}] = true
		if err := kgoCommit(ctx, r, m); err != nil {
			failure = fmt.Errorf("commit: %w", err)
			break
		}
	}
	if err := r.Close(); err != nil && failure == nil {
		failure = err
	}
	if failure != nil {
		return nil, failure
	}
	return map[string]any{"records": recsJSON(out), "first_ms": firstMs}, nil
}

// kgoClient: a Client on a Transport of its own. kafka-go's DefaultTransport, shared by the whole process, caches
// metadata (MetadataTTL 6 s): a topic created since its last refresh is unknown to it.
// kgoCommit: CommitMessages, retried (for up to 10 s) after a temporary Kafka error or a network error: kafka-go
// hands NOT_COORDINATOR (after a coordinator move) and the coordinator's closed connection (after it stopped) to
// the application instead of finding the coordinator again itself.
func kgoCommit(ctx context.Context, r *kafka.Reader, m kafka.Message) error {
	for attempt := 1; ; attempt++ {
		err := r.CommitMessages(ctx, m)
		var ke kafka.Error
		var ne net.Error
		retriable := (errors.As(err, &ke) && ke.Temporary()) || errors.As(err, &ne) || errors.Is(err, io.EOF)
		if err == nil || attempt >= 50 || !retriable || ctx.Err() != nil {
			return err
		}
		log.Printf("kafka-go commit of %d/%d (retrying): %v", m.Partition, m.Offset, err)
		time.Sleep(200 * time.Millisecond)
	}
}

func kgoClient(c cmd) (*kafka.Client, context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tr := &kafka.Transport{}
	return &kafka.Client{Addr: kafka.TCP(brokers(c)...), Timeout: 30 * time.Second, Transport: tr}, ctx,
		func() { cancel(); tr.CloseIdleConnections() }
}

func kgoMetadata(c cmd) (map[string]any, error) {
	cl, ctx, cancel := kgoClient(c)
	defer cancel()
	resp, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: c.strs("topics")})
	if err != nil {
		return nil, err
	}
	brokers := []any{}
	for _, b := range resp.Brokers {
		brokers = append(brokers, []any{b.ID, b.Host, b.Port})
	}
	topics := map[string]any{}
	for _, t := range resp.Topics {
		if t.Error == nil {
			topics[t.Name] = len(t.Partitions)
		}
	}
	return map[string]any{"brokers": brokers, "topics": topics, "cluster_id": resp.ClusterID}, nil
}

func kgoCreateTopic(c cmd) (map[string]any, error) {
	cl, ctx, cancel := kgoClient(c)
	defer cancel()
	tc := kafka.TopicConfig{Topic: c.str("topic"), NumPartitions: int(c.num("partitions", 1)), ReplicationFactor: 1}
	for k, v := range c.strMap("topic_config") {
		tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: k, ConfigValue: v})
	}
	resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{tc}})
	if err != nil {
		return nil, err
	}
	return nil, resp.Errors[c.str("topic")]
}

func kgoDeleteTopic(c cmd) (map[string]any, error) {
	cl, ctx, cancel := kgoClient(c)
	defer cancel()
	resp, err := cl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{c.str("topic")}})
	if err != nil {
		return nil, err
	}
	return nil, resp.Errors[c.str("topic")]
}

func kgoCreatePartitions(c cmd) (map[string]any, error) {
	cl, ctx, cancel := kgoClient(c)
	defer cancel()
	resp, err := cl.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{
		Topics: []kafka.TopicPartitionsConfig{{Name: c.str("topic"), Count: int32(c.num("total", 0))}}})
	if err != nil {
		return nil, err
	}
	return nil, resp.Errors[c.str("topic")]
}

func kgoDescribeConfig(c cmd) (map[string]any, error) {
	cl, ctx, cancel := kgoClient(c)
	defer cancel()
	resp, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: c.str("topic")}}})
	if err != nil {
		return nil, err
	}
	if len(resp.Resources) != 1 {
		return nil, fmt.Errorf("%d resources in the answer", len(resp.Resources))
	}
	if resp.Resources[0].Error != nil {
		return nil, resp.Resources[0].Error
	}
	out := map[string]any{}
	for _, e := range resp.Resources[0].ConfigEntries {
		out[e.ConfigName] = e.ConfigValue
	}
	return map[string]any{"config": out}, nil
}

func kgoAlterConfig(c cmd) (map[string]any, error) {
	cl, ctx, cancel := kgoClient(c)
	defer cancel()
	res := kafka.IncrementalAlterConfigsRequestResource{ResourceType: kafka.ResourceTypeTopic, ResourceName: c.str("topic")}
	for k, v := range c.strMap("topic_config") {
		res.Configs = append(res.Configs, kafka.IncrementalAlterConfigsRequestConfig{Name: k, Value: v,
			ConfigOperation: kafka.ConfigOperationSet})
	}
	resp, err := cl.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{
		Resources: []kafka.IncrementalAlterConfigsRequestResource{res}})
	if err != nil {
		return nil, err
	}
	for _, r := range resp.Resources {
		if r.Error != nil {
			return nil, r.Error
		}
	}
	return nil, nil
}

func kgoListOffsets(c cmd) (map[string]any, error) {
	cl, ctx, cancel := kgoClient(c)
	defer cancel()
	topic, p := c.str("topic"), int(c.num("partition", 0))
	var req kafka.OffsetRequest
	switch c.str("spec") {
	case "earliest":
		req = kafka.FirstOffsetOf(p)
	case "latest":
		req = kafka.LastOffsetOf(p)
	default:
		req = kafka.TimeOffsetOf(p, time.UnixMilli(c.num("spec", 0)))
	}
	resp, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {req}}})
	if err != nil {
		return nil, err
	}
	for _, po := range resp.Topics[topic] {
		if po.Partition != p {
			continue
		}
		if po.Error != nil {
			return nil, po.Error
		}
		switch c.str("spec") {
		case "earliest":
			return map[string]any{"offset": po.FirstOffset}, nil
		case "latest":
			return map[string]any{"offset": po.LastOffset}, nil
		}
		for off := range po.Offsets {
			return map[string]any{"offset": off}, nil
		}
		return map[string]any{"offset": -1}, nil
	}
	return nil, fmt.Errorf("no offset for %s[%d]", topic, p)
}
