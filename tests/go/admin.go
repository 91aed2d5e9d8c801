package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// admin goes through topic, config, group and offset administration with kadm.
func admin(ctx context.Context) (result, error) {
	adm, err := adminClient()
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	out := result{}

	retention, policy := "3600000", "compact"
	configs := map[string]*string{"retention.ms": &retention, "cleanup.policy": &policy}
	created, err := adm.CreateTopics(ctx, 3, 1, configs, *topic)
	if err != nil {
		return nil, fmt.Errorf("create topics: %w", err)
	}
	c := created[*topic]
	out["create"] = map[string]any{"error": errName(c.Err), "partitions": c.NumPartitions, "replication": c.ReplicationFactor}
	again, err := adm.CreateTopics(ctx, 3, 1, nil, *topic)
	if err != nil {
		return nil, fmt.Errorf("create topics again: %w", err)
	}
	out["create_again"] = errName(again[*topic].Err)

	listed, err := adm.ListTopics(ctx, *topic)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	detail := listed[*topic]
	replicas := map[string]int{}
	for p, pd := range detail.Partitions {
		replicas[strconv.Itoa(int(p))] = len(pd.Replicas)
	}
	out["listed"] = map[string]any{"error": errName(detail.Err), "internal": detail.IsInternal, "replicas": replicas}

	described, err := adm.DescribeTopicConfigs(ctx, *topic)
	if err != nil {
		return nil, fmt.Errorf("describe configs: %w", err)
	}
	rc, err := described.On(*topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return nil, fmt.Errorf("describe configs: %w", err)
	}
	wanted := map[string]bool{"retention.ms": true, "cleanup.policy": true, "compression.type": true}
	cfgs := map[string][]string{}
	for _, cfg := range rc.Configs {
		if wanted[cfg.Key] {
			cfgs[cfg.Key] = []string{cfg.MaybeValue(), cfg.Source.String()}
		}
	}
	out["configs"] = cfgs

	// two records to each partition
	produced, err := produceSpread(ctx, *topic, 6, 3)
	if err != nil {
		return nil, err
	}
	out["produced"] = produced
	ends, err := adm.ListEndOffsets(ctx, *topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	endOffsets := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) { endOffsets[strconv.Itoa(int(o.Partition))] = o.Offset })
	out["end_offsets"] = endOffsets

	// records of a compacted topic may not be deleted; once it deletes too, they may
	var cut kadm.Offsets
	cut.AddOffset(*topic, 0, 1, -1)
	refused, err := adm.DeleteRecords(ctx, cut)
	if err != nil {
		return nil, fmt.Errorf("delete records: %w", err)
	}
	out["delete_records_compacted"] = errName(refused.Error())
	longer, deletes := "7200000", "delete"
	altered, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: &longer},
		{Op: kadm.SetConfig, Name: "cleanup.policy", Value: &deletes},
	}, *topic)
	if err == nil {
		_, err = altered.On(*topic, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("alter configs: %w", err)
	}
	// Kafka applies a topic's new cleanup.policy a moment after it answers the change:
	// until then DeleteRecords is still refused as for a compacted topic
	var trimmed kadm.DeleteRecordsResponses
	for attempt := 0; ; attempt++ {
		trimmed, err = adm.DeleteRecords(ctx, cut)
		if err == nil {
			err = trimmed.Error()
		}
		if err == nil || !errors.Is(err, kerr.PolicyViolation) || attempt == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("delete records: %w", err)
	}
	starts, err := adm.ListStartOffsets(ctx, *topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list start offsets: %w", err)
	}
	startOffsets := map[string]int64{}
	starts.Each(func(o kadm.ListedOffset) { startOffsets[strconv.Itoa(int(o.Partition))] = o.Offset })
	out["start_offsets"] = startOffsets

	grown, err := adm.UpdatePartitions(ctx, 4, *topic)
	if err == nil {
		err = grown.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("create partitions: %w", err)
	}
	after, err := adm.ListTopics(ctx, *topic)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	redescribed, err := adm.DescribeTopicConfigs(ctx, *topic)
	if err != nil {
		return nil, fmt.Errorf("describe configs: %w", err)
	}
	rc, _ = redescribed.On(*topic, nil)
	changed := map[string]any{"partitions": len(after[*topic].Partitions)}
	for _, cfg := range rc.Configs {
		if cfg.Key == "retention.ms" || cfg.Key == "cleanup.policy" {
			changed[cfg.Key] = cfg.MaybeValue()
		}
	}
	out["altered"] = changed

	var commit kadm.Offsets
	commit.Add(kadm.Offset{Topic: *topic, Partition: 0, At: 2, LeaderEpoch: -1, Metadata: "two"})
	commit.Add(kadm.Offset{Topic: *topic, Partition: 1, At: 1, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, *group, commit); err != nil {
		return nil, fmt.Errorf("commit offsets: %w", err)
	}
	fetched, err := adm.FetchOffsets(ctx, *group)
	if err == nil {
		err = fetched.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("fetch offsets: %w", err)
	}
	offsets := map[string][]any{}
	for p, o := range fetched[*topic] {
		offsets[strconv.Itoa(int(p))] = []any{o.At, o.Metadata}
	}
	out["offsets"] = offsets

	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	g, ok := groups[*group]
	out["group_listed"] = map[string]any{"found": ok, "state": g.State, "type": g.GroupType, "protocol_type": g.ProtocolType}
	dg, err := adm.DescribeGroups(ctx, *group)
	if err != nil {
		return nil, fmt.Errorf("describe groups: %w", err)
	}
	d := dg[*group]
	out["group_described"] = map[string]any{
		"error": errName(d.Err), "state": d.State, "protocol_type": d.ProtocolType, "members": len(d.Members),
	}

	deleted, err := adm.DeleteTopic(ctx, *topic)
	if err != nil {
		return nil, fmt.Errorf("delete topic: %w", err)
	}
	out["delete"] = errName(deleted.Err)
	// all topics listed: a Metadata request naming a missing topic is retried for seconds
	if err := waitFor(ctx, "the deleted topic to leave the metadata", func() bool {
		left, err := adm.ListTopics(ctx)
		return err == nil && !left.Has(*topic)
	}); err != nil {
		return nil, err
	}
	dgroup, err := adm.DeleteGroup(ctx, *group)
	if err != nil {
		return nil, fmt.Errorf("delete group: %w", err)
	}
	out["delete_group"] = errName(dgroup.Err)
	return out, nil
}
