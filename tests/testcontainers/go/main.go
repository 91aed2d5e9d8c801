// tckafka starts a Kafka image through testcontainers-go's Kafka module
// (github.com/testcontainers/testcontainers-go/modules/kafka) and runs, with franz-go,
// what a test would: a producer, a consumer group and transactions. It prints one JSON
// line (tests/testcontainers/scenario.py reads it); a failure prints {"error": "..."}
// and exits 1.
//
//	tckafka -image localhost/odradek:test -label odradek.test.session=ID [-ready-only]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tckafka "github.com/testcontainers/testcontainers-go/modules/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type result map[string]any

var (
	image   = flag.String("image", "localhost/odradek:test", "the Kafka image")
	label   = flag.String("label", "", "KEY=VALUE: a label for the container")
	timeout = flag.Duration("timeout", 100*time.Second, "time limit for the run")
	// bench/testcontainers_start.py: how long Run took, and nothing else
	readyOnly = flag.Bool("ready-only", false, "start the container, print ready_seconds, stop it")
)

const (
	orders   = "orders"
	payments = "payments"
	records  = 20
)

func main() {
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	out, err := run(ctx)
	if err != nil {
		out = result{"error": err.Error()}
	}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
	if err != nil {
		os.Exit(1)
	}
}

func run(ctx context.Context) (result, error) {
	var opts []testcontainers.ContainerCustomizer
	if key, value, ok := strings.Cut(*label, "="); ok {
		opts = append(opts, testcontainers.WithLabels(map[string]string{key: value}))
	}
	began := time.Now()
	kafka, err := tckafka.Run(ctx, *image, opts...)
	// the module's shell is process 1 and passes no SIGTERM on (as with Confluent's
	// image): a stop would wait its whole timeout, 10 s by default, before the kill
	defer func() { _ = testcontainers.TerminateContainer(kafka, testcontainers.StopTimeout(0)) }()
	if err != nil {
		return nil, err
	}
	ready := time.Since(began).Seconds()
	if *readyOnly {
		return result{"ready_seconds": ready}, nil
	}
	brokers, err := kafka.Brokers(ctx)
	if err != nil {
		return nil, err
	}
	out := result{"ready_seconds": ready, "bootstrap": strings.Join(brokers, ",")}
	if err := scenario(ctx, brokers, out); err != nil {
		return nil, err
	}
	return out, nil
}

func scenario(ctx context.Context, brokers []string, out result) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for name, partitions := range map[string]int32{orders: 3, payments: 1} {
		resp, err := adm.CreateTopic(ctx, partitions, 1, nil, name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
	}
	for i := 0; i < records; i++ {
		value := fmt.Sprintf("order-%d", i)
		record := &kgo.Record{Topic: orders, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(value)}
		if err := cl.ProduceSync(ctx, record).FirstErr(); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
	}
	consumed, err := consumeAsGroup(ctx, brokers)
	if err != nil {
		return err
	}
	out["consumed"] = consumed
	offsets, err := adm.FetchOffsets(ctx, "readers")
	if err != nil {
		return fmt.Errorf("fetch offsets: %w", err)
	}
	var committed int64
	offsets.Each(func(o kadm.OffsetResponse) { committed += o.At })
	out["group_committed"] = committed
	if err := transact(ctx, brokers); err != nil {
		return err
	}
	for name, level := range map[string]kgo.IsolationLevel{
		"read_committed":   kgo.ReadCommitted(),
		"read_uncommitted": kgo.ReadUncommitted(),
	} {
		values, err := readPayments(ctx, brokers, level)
		if err != nil {
			return err
		}
		out[name] = values
	}
	return nil
}

// consumeAsGroup reads the orders as group "readers", commits and leaves.
func consumeAsGroup(ctx context.Context, brokers []string) ([]string, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumerGroup("readers"),
		kgo.ConsumeTopics(orders),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var values []string
	for len(values) < records {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("consumed %d of %d orders: %w", len(values), records, ctx.Err())
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return nil, fmt.Errorf("fetch: %w", errs[0].Err)
		}
		fetches.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return values, nil
}

// transact commits five payments, aborts two, then commits a last one.
func transact(ctx context.Context, brokers []string) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.TransactionalID("payments-txn"),
		kgo.DefaultProduceTopic(payments),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	batches := []struct {
		values []string
		commit kgo.TransactionEndTry
	}{
		{[]string{"paid-0", "paid-1", "paid-2", "paid-3", "paid-4"}, kgo.TryCommit},
		{[]string{"void-0", "void-1"}, kgo.TryAbort},
		{[]string{"paid-last"}, kgo.TryCommit},
	}
	for _, batch := range batches {
		if err := cl.BeginTransaction(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		for _, value := range batch.values {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(value)).FirstErr(); err != nil {
				return fmt.Errorf("produce in a transaction: %w", err)
			}
		}
		if err := cl.EndTransaction(ctx, batch.commit); err != nil {
			return fmt.Errorf("end transaction: %w", err)
		}
	}
	return nil
}

// readPayments reads the payments topic from its start up to "paid-last".
func readPayments(ctx context.Context, brokers []string, level kgo.IsolationLevel) ([]string, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(payments),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(level),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	values := []string{}
	for len(values) == 0 || values[len(values)-1] != "paid-last" {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, errors.New("paid-last not read: " + strings.Join(values, ","))
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return nil, fmt.Errorf("fetch: %w", errs[0].Err)
		}
		fetches.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	return values, nil
}
