// Admin commands about groups of every type and producers (KafkaTool dispatches here):
// list-groups, describe-share-groups, share-group-offsets, describe-producers.

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;

final class Groups {
    private Groups() {}

    // Without --type: the consumer groups (classic and consumer), as listConsumerGroups did.
    // --type all: every group. --state narrows to groups in those states (e.g. Stable).
    static ListGroupsOptions listOptions(List<String> types, List<String> states) {
        ListGroupsOptions opts;
        if (types.isEmpty()) {
            opts = ListGroupsOptions.forConsumerGroups();
        } else if (types.contains("all")) {
            opts = new ListGroupsOptions();
        } else {
            Set<GroupType> wanted = new HashSet<>();
            for (String t : types) {
                wanted.add(GroupType.parse(t));
            }
            opts = new ListGroupsOptions().withTypes(wanted);
        }
        if (!states.isEmpty()) {
            Set<GroupState> wanted = new HashSet<>();
            for (String s : states) {
                wanted.add(GroupState.parse(s));
            }
            opts = opts.inGroupStates(wanted);
        }
        return opts;
    }

    static ObjectNode listingJson(GroupListing g) {
        ObjectNode n = KafkaTool.JSON.createObjectNode();
        n.put("group", g.groupId());
        n.put("type", g.type().map(GroupType::toString).orElse(null));
        n.put("protocol", g.protocol());
        n.put("state", g.groupState().map(GroupState::toString).orElse(null));
        n.put("simple", g.isSimpleConsumerGroup());
        return n;
    }

    static int list(KafkaTool.Opts o, Admin admin) throws Exception {
        ListGroupsOptions opts = listOptions(o.all("type"), o.all("state"));
        List<GroupListing> gs = new ArrayList<>(admin.listGroups(opts).all().get());
        gs.sort((a, b) -> a.groupId().compareTo(b.groupId()));
        for (GroupListing g : gs) {
            KafkaTool.emit(listingJson(g));
        }
        return 0;
    }

    static int describeShare(KafkaTool.Opts o, Admin admin) throws Exception {
        List<String> groups = o.all("group");
        var res = admin.describeShareGroups(groups).describedGroups();
        for (String g : groups) {
            ObjectNode n = KafkaTool.JSON.createObjectNode();
            n.put("group", g);
            try {
                ShareGroupDescription d = res.get(g).get();
                n.put("state", String.valueOf(d.groupState()));
                n.put("group_epoch", d.groupEpoch());
                n.put("assignment_epoch", d.targetAssignmentEpoch());
                ArrayNode ms = n.putArray("members");
                List<ShareMemberDescription> members = new ArrayList<>(d.members());
                members.sort((a, b) -> a.clientId().compareTo(b.clientId()));
                for (ShareMemberDescription m : members) {
                    ObjectNode mn = ms.addObject();
                    mn.put("member_id", m.consumerId());
                    mn.put("client_id", m.clientId());
                    mn.put("member_epoch", m.memberEpoch());
                    mn.set("assignment", ClientCommands.tpsJson(m.assignment().topicPartitions()));
                }
            } catch (ExecutionException e) {
                n.set("failure", KafkaTool.errorNode(e));
            }
            KafkaTool.emit(n);
        }
        return 0;
    }

    static List<TopicPartition> partitions(KafkaTool.Opts o, Admin admin) throws Exception {
        String topic = o.require("topic");
        TopicDescription desc = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        Integer only = o.intOrNull("partition");
        List<TopicPartition> out = new ArrayList<>();
        for (TopicPartitionInfo p : desc.partitions()) {
            if (only == null || only == p.partition()) {
                out.add(new TopicPartition(topic, p.partition()));
            }
        }
        return out;
    }

    static int shareOffsets(KafkaTool.Opts o, Admin admin) throws Exception {
        String group = o.require("group");
        List<TopicPartition> parts = partitions(o, admin);
        var spec = new ListShareGroupOffsetsSpec().topicPartitions(parts);
        Map<TopicPartition, SharePartitionOffsetInfo> offsets =
                admin.listShareGroupOffsets(Map.of(group, spec)).partitionsToOffsetInfo(group).get();
        for (TopicPartition tp : parts) {
            ObjectNode n = KafkaTool.JSON.createObjectNode();
            n.put("partition", tp.partition());
            SharePartitionOffsetInfo info = offsets.get(tp);
            if (info == null) {
                n.putNull("start_offset");
            } else {
                n.put("start_offset", info.startOffset());
                info.lag().ifPresent(lag -> n.put("lag", lag));
            }
            KafkaTool.emit(n);
        }
        return 0;
    }

    static int describeProducers(KafkaTool.Opts o, Admin admin) throws Exception {
        List<TopicPartition> parts = partitions(o, admin);
        var res = admin.describeProducers(parts).all().get();
        for (TopicPartition tp : parts) {
            ObjectNode n = KafkaTool.JSON.createObjectNode();
            n.put("partition", tp.partition());
            ArrayNode ps = n.putArray("producers");
            for (ProducerState p : res.get(tp).activeProducers()) {
                ObjectNode pn = ps.addObject();
                pn.put("producer_id", p.producerId());
                pn.put("producer_epoch", p.producerEpoch());
                pn.put("last_sequence", p.lastSequence());
                p.currentTransactionStartOffset().ifPresent(x -> pn.put("txn_start_offset", x));
            }
            KafkaTool.emit(n);
        }
        return 0;
    }
}
