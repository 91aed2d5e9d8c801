package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// member is one consumer of a KIP-848 group: what it is assigned (from the
// assignment callbacks) and what it consumed.
type member struct {
	cl       *kgo.Client
	mu       sync.Mutex
	assigned map[int32]bool
	consumed map[int32]int
	values   []string
	stop     context.CancelFunc
	done     chan error
}

func startMember(ctx context.Context, g, name string) (*member, error) {
	m := &member{assigned: map[int32]bool{}, consumed: map[int32]int{}, done: make(chan error, 1)}
	update := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range ps[name] {
				if add {
					m.assigned[p] = true
				} else {
					delete(m.assigned, p)
				}
			}
		}
	}
	cl, err := client(
		kgo.ConsumerGroup(g),
		kgo.ConsumeTopics(name),
		// the consumer protocol (ConsumerGroupHeartbeat), the broker's range assignor
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(update(true)),
		kgo.OnPartitionsRevoked(update(false)),
		kgo.OnPartitionsLost(update(false)),
	)
	if err != nil {
		return nil, err
	}
	m.cl = cl
	pollCtx, stop := context.WithCancel(ctx)
	m.stop = stop
	go func() {
		for {
			fetches := cl.PollFetches(pollCtx)
			if pollCtx.Err() != nil {
				m.done <- nil
				return
			}
			if errs := fetches.Errors(); len(errs) > 0 {
				m.done <- fmt.Errorf("poll: %w", errs[0].Err)
				return
			}
			m.mu.Lock()
			fetches.EachRecord(func(r *kgo.Record) {
				m.consumed[r.Partition]++
				m.values = append(m.values, string(r.Value))
			})
			m.mu.Unlock()
		}
	}()
	return m, nil
}

func (m *member) assignment() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return sortedPartitions(m.assigned)
}

func (m *member) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.values)
}

// halt stops polling and commits what was consumed.
func (m *member) halt(ctx context.Context) error {
	m.stop()
	if err := <-m.done; err != nil {
		return err
	}
	return m.cl.CommitUncommittedOffsets(ctx)
}

// group848 runs two members of a consumer-protocol group on four partitions: the
// second member's join splits the partitions, each consumes its own and commits.
func group848(ctx context.Context) (result, error) {
	const partitions = 4
	adm, err := adminClient()
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	if err := createTopic(ctx, adm, *topic, partitions); err != nil {
		return nil, err
	}
	first, err := startMember(ctx, *group, *topic)
	if err != nil {
		return nil, err
	}
	defer first.cl.Close()
	if err := waitFor(ctx, "the first member to get all partitions", func() bool {
		return len(first.assignment()) == partitions
	}); err != nil {
		return nil, err
	}
	second, err := startMember(ctx, *group, *topic)
	if err != nil {
		return nil, err
	}
	defer second.cl.Close()
	members := []*member{first, second}
	if err := waitFor(ctx, "the partitions to be split", func() bool {
		a, b := first.assignment(), second.assignment()
		return len(a) == partitions/2 && len(b) == partitions/2 && !overlap(a, b)
	}); err != nil {
		return nil, err
	}
	if _, err := produceSpread(ctx, *topic, *records, partitions); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, "every record to be consumed", func() bool {
		return first.count()+second.count() >= *records
	}); err != nil {
		return nil, err
	}
	// time for a duplicate to show up, had one been sent
	time.Sleep(300 * time.Millisecond)
	var described []map[string]any
	for _, m := range members {
		if err := m.halt(ctx); err != nil {
			return nil, err
		}
		described = append(described, map[string]any{
			"assigned": m.assignment(), "consumed": m.consumed, "values": len(m.values),
		})
	}
	sort.Slice(described, func(i, j int) bool {
		return described[i]["assigned"].([]int32)[0] < described[j]["assigned"].([]int32)[0]
	})
	seen := map[string]bool{}
	for _, m := range members {
		for _, v := range m.values {
			seen[v] = true
		}
	}
	committed, err := committedOffsets(ctx, adm, *group, *topic)
	if err != nil {
		return nil, err
	}
	out := result{"members": described, "distinct": len(seen), "committed": committed}
	if err := describeConsumerGroup(ctx, adm, out, "stable"); err != nil {
		return nil, err
	}
	first.cl.Close()
	second.cl.Close()
	if err := describeConsumerGroup(ctx, adm, out, "after_leave"); err != nil {
		return nil, err
	}
	return out, nil
}

func overlap(a, b []int32) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// describeConsumerGroup adds what ListGroups and ConsumerGroupDescribe say of the
// group to out, under keys ending in the suffix.
func describeConsumerGroup(ctx context.Context, adm *kadm.Client, out result, suffix string) error {
	listed, err := adm.ListGroupsByType(ctx, []string{"consumer"})
	if err != nil {
		return fmt.Errorf("list groups: %w", err)
	}
	g, ok := listed[*group]
	if !ok {
		return fmt.Errorf("ListGroups of type consumer does not list %s", *group)
	}
	out["listed_"+suffix] = map[string]string{"type": g.GroupType, "state": g.State, "protocol_type": g.ProtocolType}
	described, err := adm.DescribeConsumerGroups(ctx, *group)
	if err != nil {
		return fmt.Errorf("describe consumer groups: %w", err)
	}
	d := described[*group]
	if d.Err != nil {
		return fmt.Errorf("describe consumer group: %w", d.Err)
	}
	var assignments [][]int32
	for _, m := range d.Members {
		for _, tp := range m.Assignment.Sorted() {
			assignments = append(assignments, tp.Partitions)
		}
	}
	sort.Slice(assignments, func(i, j int) bool {
		return len(assignments[j]) == 0 || len(assignments[i]) > 0 && assignments[i][0] < assignments[j][0]
	})
	out["described_"+suffix] = map[string]any{"state": d.State, "assignor": d.AssignorName, "assignments": assignments}
	return nil
}

// transact copies one topic to another in upper case with a GroupTransactSession:
// at most 8 records a transaction, the first one aborted on purpose (and its records
// consumed again), the rest committed. -consumer-protocol joins the group with
// KIP-848's protocol instead of the classic one.
func transact(ctx context.Context) (result, error) {
	const partitions = 3
	in, out := *topic, *topic+"-out"
	adm, err := adminClient()
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	for _, name := range []string{in, out} {
		if err := createTopic(ctx, adm, name, partitions); err != nil {
			return nil, err
		}
	}
	if _, err := produceSpread(ctx, in, *records, partitions); err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(*bootstrap),
		kgo.TransactionalID(*group + "-txn"),
		kgo.ConsumerGroup(*group),
		kgo.ConsumeTopics(in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}
	if *consumerProtocol {
		opts = append(opts, kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer())
	}
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	aborted, committed, txns := 0, 0, 0
	for committed < *records {
		fetches := sess.PollRecords(ctx, 8)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("transform: %d of %d records committed: %w", committed, *records, ctx.Err())
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return nil, fmt.Errorf("poll: %w", errs[0].Err)
		}
		if err := sess.Begin(); err != nil {
			return nil, fmt.Errorf("begin: %w", err)
		}
		n := 0
		var produceErr error
		var mu sync.Mutex
		fetches.EachRecord(func(r *kgo.Record) {
			n++
			upper := &kgo.Record{Topic: out, Partition: r.Partition, Key: r.Key, Value: []byte(strings.ToUpper(string(r.Value)))}
			sess.Produce(ctx, upper, func(_ *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				produceErr = errors.Join(produceErr, err)
			})
		})
		abort := aborted == 0 && n > 0
		if abort {
			// the records reach the log before the abort, so that read_uncommitted sees them
			if err := sess.Client().Flush(ctx); err != nil {
				return nil, fmt.Errorf("flush: %w", err)
			}
		}
		ok, err := sess.End(ctx, kgo.TransactionEndTry(!abort))
		if err != nil || produceErr != nil {
			return nil, fmt.Errorf("end transaction: %w", errors.Join(err, produceErr))
		}
		switch {
		case abort:
			aborted += n
		case ok:
			committed += n
			txns++
		default:
			return nil, fmt.Errorf("a commit of %d records was turned into an abort", n)
		}
	}
	sess.Close()
	results := result{"aborted": aborted, "committed": committed, "transactions": txns}
	visible, err := readTopic(ctx, out, true)
	if err != nil {
		return nil, err
	}
	values, byPartition := map[string]int{}, map[string]int{}
	for _, r := range visible {
		values[string(r.Value)]++
		byPartition[strconv.Itoa(int(r.Partition))]++
	}
	want := 0
	for i := range *records {
		if values["V-"+strconv.Itoa(i)] == 1 {
			want++
		}
	}
	results["read_committed"] = map[string]any{"count": len(visible), "each_once": want, "by_partition": byPartition}
	all, err := readTopic(ctx, out, false)
	if err != nil {
		return nil, err
	}
	results["read_uncommitted"] = len(all)
	offsets, err := committedOffsets(ctx, adm, *group, in)
	if err != nil {
		return nil, err
	}
	results["offsets"] = offsets
	describedTxns, err := adm.DescribeTransactions(ctx, *group+"-txn")
	if err != nil {
		return nil, fmt.Errorf("describe transactions: %w", err)
	}
	for _, t := range describedTxns {
		results["described_txn"] = map[string]any{"error": errName(t.Err), "state": t.State, "topics": len(t.Topics)}
	}
	return results, nil
}
