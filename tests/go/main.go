// kafkago runs one scenario of the franz-go client (kgo, kadm) against a broker and
// prints its result as one JSON line on stdout; tests/clients/test_franz_go.py runs
// each scenario against Odradek and Apache Kafka 4.4 and compares the results.
//
//	kafkago -bootstrap HOST:PORT -topic T -group G SCENARIO
//
// Scenarios: produce-consume, group-848, transact, admin. A failure prints
// {"error": "..."} and exits 1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

type result map[string]any

var (
	bootstrap = flag.String("bootstrap", "127.0.0.1:9092", "broker address")
	topic     = flag.String("topic", "franz-go", "topic name (other topics get suffixes)")
	group     = flag.String("group", "franz-go", "group name")
	records   = flag.Int("records", 30, "records to produce")
	timeout   = flag.Duration("timeout", 60*time.Second, "time limit for the scenario")

	consumerProtocol = flag.Bool("consumer-protocol", false, "transact: join with KIP-848's protocol")
)

var scenarios = map[string]func(context.Context) (result, error){
	"produce-consume": produceConsume,
	"group-848":       group848,
	"transact":        transact,
	"admin":           admin,
}

func main() {
	flag.Parse()
	run, ok := scenarios[flag.Arg(0)]
	if flag.NArg() != 1 || !ok {
		fmt.Fprintln(os.Stderr, "usage: kafkago [flags] produce-consume|group-848|transact|admin")
		os.Exit(2)
	}
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

// client opens a kgo client on the bootstrap address with the scenario's options.
func client(opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{kgo.SeedBrokers(*bootstrap), kgo.ClientID("odradek-franz-go")}
	return kgo.NewClient(append(base, opts...)...)
}

func adminClient() (*kadm.Client, error) {
	cl, err := client()
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// errName is Kafka's name for a broker error (TOPIC_ALREADY_EXISTS), or the text of another.
func errName(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

func createTopic(ctx context.Context, adm *kadm.Client, name string, partitions int32) error {
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	return nil
}

// produceSpread writes n records, record i to partition i % partitions, and returns
// the offset each record got, by partition.
func produceSpread(ctx context.Context, name string, n int, partitions int32) (map[string][]int64, error) {
	cl, err := client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	batch := make([]*kgo.Record, n)
	for i := range batch {
		batch[i] = &kgo.Record{
			Topic:     name,
			Partition: int32(i) % partitions,
			Key:       []byte("k-" + strconv.Itoa(i)),
			Value:     []byte("v-" + strconv.Itoa(i)),
			Headers:   []kgo.RecordHeader{{Key: "seq", Value: []byte(strconv.Itoa(i))}},
		}
	}
	results := cl.ProduceSync(ctx, batch...)
	if err := results.FirstErr(); err != nil {
		return nil, fmt.Errorf("produce: %w", err)
	}
	offsets := map[string][]int64{}
	for _, r := range results {
		p := strconv.Itoa(int(r.Record.Partition))
		offsets[p] = append(offsets[p], r.Record.Offset)
	}
	return offsets, nil
}

// readTopic reads every partition of a topic from the start up to its end as listed
// before reading (the last stable offset with readCommitted, else the high watermark).
// Control records are read to know where a partition ends, and left out of the result.
func readTopic(ctx context.Context, name string, readCommitted bool) ([]*kgo.Record, error) {
	adm, err := adminClient()
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	list, isolation := adm.ListEndOffsets, kgo.ReadUncommitted()
	if readCommitted {
		list, isolation = adm.ListCommittedOffsets, kgo.ReadCommitted()
	}
	ends, err := list(ctx, name)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list end offsets of %s: %w", name, err)
	}
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			remaining[o.Partition] = o.Offset
		}
	})
	start := map[int32]kgo.Offset{}
	for p := range remaining {
		start[p] = kgo.NewOffset().AtStart()
	}
	cl, err := client(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{name: start}),
		kgo.FetchIsolationLevel(isolation),
		kgo.KeepControlRecords(),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var got []*kgo.Record
	for len(remaining) > 0 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read %s: %d partitions not read to the end: %w", name, len(remaining), ctx.Err())
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return nil, fmt.Errorf("read %s partition %d: %w", name, errs[0].Partition, errs[0].Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				got = append(got, r)
			}
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
		})
	}
	return got, nil
}

type record struct {
	Offset  int64      `json:"offset"`
	Key     string     `json:"key"`
	Value   string     `json:"value"`
	Headers [][]string `json:"headers"`
}

// produceConsume writes records to three partitions and reads them back in order.
func produceConsume(ctx context.Context) (result, error) {
	adm, err := adminClient()
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	if err := createTopic(ctx, adm, *topic, 3); err != nil {
		return nil, err
	}
	produced, err := produceSpread(ctx, *topic, *records, 3)
	if err != nil {
		return nil, err
	}
	got, err := readTopic(ctx, *topic, false)
	if err != nil {
		return nil, err
	}
	consumed := map[string][]record{}
	for _, r := range got {
		rec := record{Offset: r.Offset, Key: string(r.Key), Value: string(r.Value), Headers: [][]string{}}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, []string{h.Key, string(h.Value)})
		}
		p := strconv.Itoa(int(r.Partition))
		consumed[p] = append(consumed[p], rec)
	}
	return result{"produced": produced, "consumed": consumed}, nil
}

func sortedPartitions(ps map[int32]bool) []int32 {
	out := make([]int32, 0, len(ps))
	for p := range ps {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// waitFor polls cond every 50 ms until it holds or ctx ends.
func waitFor(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// committedOffsets is the group's committed offset of each partition of a topic.
func committedOffsets(ctx context.Context, adm *kadm.Client, g, name string) (map[string]int64, error) {
	fetched, err := adm.FetchOffsets(ctx, g)
	if err == nil {
		err = fetched.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("fetch offsets of %s: %w", g, err)
	}
	out := map[string]int64{}
	for p, o := range fetched[name] {
		out[strconv.Itoa(int(p))] = o.At
	}
	return out, nil
}
