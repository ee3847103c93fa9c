package main

// Sarama (github.com/IBM/sarama): SyncProducer, Consumer (partition consumers), ConsumerGroup, ClusterAdmin.
// The config names the newest Kafka release Sarama knows (sarama.MaxVersion), so it uses the newest request
// versions it implements.

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

var saramaOps = map[string]op{
	"produce":           saramaProduce,
	"consume":           saramaConsume,
	"group_consume":     saramaGroupConsume,
	"txn_batches":       saramaTxnBatches,
	"metadata":          saramaMetadata,
	"create_topic":      saramaCreateTopic,
	"delete_topic":      saramaDeleteTopic,
	"create_partitions": saramaCreatePartitions,
	"describe_config":   saramaDescribeConfig,
	"alter_config":      saramaAlterConfig,
	"list_offsets":      saramaListOffsets,
}

func init() {
	if os.Getenv("KCLIENTS_SARAMA_LOG") != "" {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	}
}

func saramaConfig(c cmd) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.MaxVersion
	cfg.ClientID = "kafkalite-compat"
	cfg.Metadata.AllowAutoTopicCreation = false
	cfg.Net.ReadTimeout = 35 * time.Second
	if c.str("isolation") == "read_committed" || c.strMap("config")["isolation.level"] == "read_committed" {
		cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	return cfg
}

func saramaCodec(name string) (sarama.CompressionCodec, error) {
	switch name {
	case "", "none":
		return sarama.CompressionNone, nil
	case "gzip":
		return sarama.CompressionGZIP, nil
	case "snappy":
		return sarama.CompressionSnappy, nil
	case "lz4":
		return sarama.CompressionLZ4, nil
	case "zstd":
		return sarama.CompressionZSTD, nil
	}
	return 0, fmt.Errorf("unknown codec %q", name)
}

func saramaMessage(topic string, r rec) *sarama.ProducerMessage {
	m := &sarama.ProducerMessage{Topic: topic, Partition: r.Partition, Timestamp: fromMs(r.Timestamp)}
	if r.Key != nil {
		m.Key = sarama.ByteEncoder(r.Key)
	}
	if r.Value != nil {
		m.Value = sarama.ByteEncoder(r.Value)
	}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
	}
	return m
}

func saramaRec(m *sarama.ConsumerMessage) rec {
	out := rec{Key: m.Key, Value: m.Value, Timestamp: ms(m.Timestamp), Partition: m.Partition, Offset: m.Offset}
	for _, h := range m.Headers {
		out.Headers = append(out.Headers, header{string(h.Key), h.Value})
	}
	return out
}

func saramaProduce(c cmd) (map[string]any, error) {
	cfg := saramaConfig(c)
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	cfg.Producer.Timeout = 30 * time.Second
	codec, err := saramaCodec(c.str("compression"))
	if err != nil {
		return nil, err
	}
	cfg.Producer.Compression = codec
	switch c.str("acks") {
	case "0":
		cfg.Producer.RequiredAcks = sarama.NoResponse
	case "1":
		cfg.Producer.RequiredAcks = sarama.WaitForLocal
	default:
		cfg.Producer.RequiredAcks = sarama.WaitForAll
	}
	if c.boolean("idempotent") {
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
	}
	if c.has("max_request_bytes") {
		cfg.Producer.MaxMessageBytes = int(c.num("max_request_bytes", 0))
	}
	// retries over the whole timeout, as the other drivers' delivery timeouts do (Sarama's default: 3 retries
	// 100 ms apart, which a restarting broker outlasts)
	cfg.Producer.Retry.Backoff = 250 * time.Millisecond
	cfg.Producer.Retry.Max = max(3, int(c.timeout()/cfg.Producer.Retry.Backoff))
	// and the leader look-up too: a retried message whose partition has no broker fails at once when the metadata
	// refresh gives up (async_producer.go updateLeaderIfBrokerProducerIsNil: returnError, not retried), after 3
	// tries 250 ms apart by default; Apache Kafka takes ~10 s to come back from a SIGKILL
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	cfg.Metadata.Retry.Max = max(3, int(c.timeout()/cfg.Metadata.Retry.Backoff))
	p, err := sarama.NewSyncProducer(brokers(c), cfg)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	var msgs []*sarama.ProducerMessage
	for _, r := range c.records() {
		msgs = append(msgs, saramaMessage(c.str("topic"), r))
	}
	if err := p.SendMessages(msgs); err != nil {
		if pe, ok := err.(sarama.ProducerErrors); ok && len(pe) > 0 {
			return nil, fmt.Errorf("%d of %d failed, first: %w", len(pe), len(msgs), pe[0].Err)
		}
		return nil, err
	}
	offsets := []any{}
	for _, m := range msgs {
		offsets = append(offsets, []any{m.Partition, m.Offset})
	}
	return map[string]any{"offsets": offsets}, nil
}

func saramaConsume(c cmd) (map[string]any, error) {
	cfg := saramaConfig(c)
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	if c.has("max_fetch_bytes") {
		m := int32(c.num("max_fetch_bytes", 0))
		cfg.Consumer.Fetch.Default = m
		cfg.Consumer.Fetch.Max = 2 * m
	}
	cons, err := sarama.NewConsumer(brokers(c), cfg)
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	start := sarama.OffsetOldest
	if c.str("start") != "earliest" {
		start = c.num("start", 0)
	}
	msgs := make(chan *sarama.ConsumerMessage, 1024)
	var pcs []sarama.PartitionConsumer
	for _, p := range c.ints("partitions") {
		pc, err := cons.ConsumePartition(c.str("topic"), p, start)
		if err != nil {
			return nil, err
		}
		defer pc.Close()
		pcs = append(pcs, pc)
		go func() {
			for m := range pc.Messages() {
				msgs <- m
			}
		}()
		go func() { // Sarama's partition consumers retry by themselves: errors are reported, not fatal
			for e := range pc.Errors() {
				log.Printf("sarama partition consumer (continuing): %v", e)
			}
		}()
	}
	count := int(c.num("count", 0))
	out := []rec{}
	deadline := time.After(c.timeout())
	for len(out) < count {
		select {
		case m := <-msgs:
			out = append(out, saramaRec(m))
		case <-deadline:
			return map[string]any{"records": recsJSON(out)}, nil
		}
	}
	return map[string]any{"records": recsJSON(out)}, nil
}

// saramaGroup: a ConsumerGroupHandler that marks every message and commits when its claim has nothing buffered,
// and every 200 ms besides (Consumer.Offsets.AutoCommit is off): Sarama drops a commit the coordinator refused
// (NOT_COORDINATOR after a coordinator move: it only releases the coordinator), so the marked offsets go out again
// at the next Commit, to the new coordinator.
type saramaGroup struct {
	mu      sync.Mutex
	out     []rec
	seen    map[[2]int64]bool
	count   int
	t0      time.Time
	firstMs int64
	done    chan struct{}
	once    sync.Once
}

func (g *saramaGroup) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (g *saramaGroup) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (g *saramaGroup) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	defer s.Commit()
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			g.mu.Lock()
			if g.firstMs < 0 {
				g.firstMs = time.Since(g.t0).Milliseconds()
			}
			g.out = append(g.out, saramaRec(m))
			g.seen[[2]int64{int64(m.Partition), m.Offset}] = true
			complete := len(g.seen) >= g.count
			g.mu.Unlock()
			s.MarkMessage(m, "")
			if len(claim.Messages()) == 0 || complete {
				s.Commit()
			}
			if complete {
				g.once.Do(func() { close(g.done) })
			}
		case <-tick.C:
			s.Commit()
		case <-s.Context().Done():
			return nil
		}
	}
}

func saramaGroupConsume(c cmd) (map[string]any, error) {
	t0 := time.Now()
	cfg := saramaConfig(c)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	cg, err := sarama.NewConsumerGroup(brokers(c), c.str("group"), cfg)
	if err != nil {
		return nil, err
	}
	g := &saramaGroup{seen: map[[2]int64]bool{}, count: int(c.num("count", 0)), t0: t0, firstMs: -1,
		done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{c.str("topic")}, g); err != nil && ctx.Err() == nil {
				stopped <- err
				return
			}
		}
		stopped <- nil
	}()
	go func() { // errors the group recovers from itself (a broker gone, a refused commit): reported, not fatal
		for e := range cg.Errors() {
			log.Printf("sarama consumer group (continuing): %v", e)
		}
	}()
	var failure error
	select {
	case <-g.done:
	case failure = <-stopped:
	case <-time.After(c.timeout()):
	}
	cancel()
	if err := cg.Close(); err != nil && failure == nil {
		failure = err
	}
	if failure != nil {
		return nil, failure
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return map[string]any{"records": recsJSON(g.out), "first_ms": g.firstMs}, nil
}

func saramaTxnBatches(c cmd) (map[string]any, error) {
	cfg := saramaConfig(c)
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = c.str("transactional_id")
	cfg.Net.MaxOpenRequests = 1
	p, err := sarama.NewSyncProducer(brokers(c), cfg)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	for _, b := range c["batches"].([]any) {
		batch := cmd(b.(map[string]any))
		if err := p.BeginTxn(); err != nil {
			return nil, fmt.Errorf("begin: %w", err)
		}
		var msgs []*sarama.ProducerMessage
		for _, r := range batch.records() {
			msgs = append(msgs, saramaMessage(c.str("topic"), r))
		}
		if err := p.SendMessages(msgs); err != nil {
			return nil, fmt.Errorf("send: %w", err)
		}
		if batch.boolean("commit") {
			err = p.CommitTxn()
		} else {
			err = p.AbortTxn()
		}
		if err != nil {
			return nil, fmt.Errorf("end transaction: %w", err)
		}
	}
	return nil, nil
}

func saramaAdmin(c cmd) (sarama.ClusterAdmin, error) {
	return sarama.NewClusterAdmin(brokers(c), saramaConfig(c))
}

func saramaMetadata(c cmd) (map[string]any, error) {
	adm, err := saramaAdmin(c)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	bs, _, err := adm.DescribeCluster()
	if err != nil {
		return nil, err
	}
	brokers := []any{}
	for _, b := range bs {
		host, port := splitHostPort(b.Addr())
		brokers = append(brokers, []any{b.ID(), host, port})
	}
	topics := map[string]any{}
	names := c.strs("topics")
	if names == nil {
		all, err := adm.ListTopics()
		if err != nil {
			return nil, err
		}
		for n, d := range all {
			topics[n] = d.NumPartitions
		}
	} else {
		tms, err := adm.DescribeTopics(names)
		if err != nil {
			return nil, err
		}
		for _, t := range tms {
			if t.Err == sarama.ErrNoError {
				topics[t.Name] = len(t.Partitions)
			}
		}
	}
	return map[string]any{"brokers": brokers, "topics": topics, "cluster_id": nil}, nil
}

func saramaCreateTopic(c cmd) (map[string]any, error) {
	adm, err := saramaAdmin(c)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	cfg := map[string]*string{}
	for k, v := range c.strMap("topic_config") {
		v := v
		cfg[k] = &v
	}
	return nil, adm.CreateTopic(c.str("topic"), &sarama.TopicDetail{NumPartitions: int32(c.num("partitions", 1)),
		ReplicationFactor: 1, ConfigEntries: cfg}, false)
}

func saramaDeleteTopic(c cmd) (map[string]any, error) {
	adm, err := saramaAdmin(c)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	return nil, adm.DeleteTopic(c.str("topic"))
}

func saramaCreatePartitions(c cmd) (map[string]any, error) {
	adm, err := saramaAdmin(c)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	return nil, adm.CreatePartitions(c.str("topic"), int32(c.num("total", 0)), nil, false)
}

func saramaDescribeConfig(c cmd) (map[string]any, error) {
	adm, err := saramaAdmin(c)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: c.str("topic")})
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, e := range entries {
		out[e.Name] = e.Value
	}
	return map[string]any{"config": out}, nil
}

func saramaAlterConfig(c cmd) (map[string]any, error) {
	adm, err := saramaAdmin(c)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	entries := map[string]sarama.IncrementalAlterConfigsEntry{}
	for k, v := range c.strMap("topic_config") {
		v := v
		entries[k] = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}
	}
	return nil, adm.IncrementalAlterConfig(sarama.TopicResource, c.str("topic"), entries, false)
}

func saramaListOffsets(c cmd) (map[string]any, error) {
	adm, err := saramaAdmin(c)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	spec := sarama.OffsetOldest
	switch c.str("spec") {
	case "earliest":
	case "latest":
		spec = sarama.OffsetNewest
	default:
		spec = c.num("spec", 0)
	}
	topic, p := c.str("topic"), int32(c.num("partition", 0))
	res, err := adm.ListOffsets(map[string]map[int32]int64{topic: {p: spec}}, nil)
	if err != nil {
		return nil, err
	}
	r := res[topic][p]
	if r == nil {
		return nil, fmt.Errorf("no offset for %s[%d]", topic, p)
	}
	if r.Err != nil && r.Err != sarama.ErrNoError {
		return nil, r.Err
	}
	return map[string]any{"offset": r.Offset}, nil
}
