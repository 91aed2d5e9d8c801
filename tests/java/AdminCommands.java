// KafkaTool's Admin-client commands: one command per run (`admin`), or a script of
// steps run by one Admin client in one JVM (`script`).

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TopicListing;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;

final class AdminCommands {
    private AdminCommands() {
    }

    static Map<String, String> adminDefaults() {
        Map<String, String> d = new HashMap<>();
        d.put("request.timeout.ms", "10000");
        d.put("default.api.timeout.ms", "15000");
        return d;
    }

    static int listOffsets(KafkaTool.Opts o, Admin admin) throws Exception {
        String topic = o.require("topic");
        String spec = o.get("spec", "latest");
        TopicDescription desc = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        Integer only = o.intOrNull("partition");
        OffsetSpec os;
        switch (spec) {
            case "earliest":
                os = OffsetSpec.earliest();
                break;
            case "latest":
                os = OffsetSpec.latest();
                break;
            case "max-timestamp":
                os = OffsetSpec.maxTimestamp();
                break;
            default:
                os = OffsetSpec.forTimestamp(Long.parseLong(spec));
        }
        Map<TopicPartition, OffsetSpec> q = new LinkedHashMap<>();
        for (TopicPartitionInfo p : desc.partitions()) {
            if (only == null || only == p.partition()) {
                q.put(new TopicPartition(topic, p.partition()), os);
            }
        }
        String iso = o.get("isolation-level", "read_uncommitted");
        var opts = new org.apache.kafka.clients.admin.ListOffsetsOptions(
                IsolationLevel.valueOf(iso.toUpperCase()));
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> res =
                admin.listOffsets(q, opts).all().get();
        for (TopicPartition tp : q.keySet()) {
            ListOffsetsResult.ListOffsetsResultInfo info = res.get(tp);
            ObjectNode n = KafkaTool.JSON.createObjectNode();
            n.put("topic", tp.topic());
            n.put("partition", tp.partition());
            n.put("offset", info.offset());
            n.put("timestamp", info.timestamp());
            info.leaderEpoch().ifPresent(e -> n.put("leader_epoch", e));
            KafkaTool.emit(n);
        }
        return 0;
    }

    // ------------------------------------------------------------------ admin

    static ConfigResource resource(KafkaTool.Opts o) {
        String topic = o.get("topic", null);
        if (topic != null) {
            return new ConfigResource(ConfigResource.Type.TOPIC, topic);
        }
        String group = o.get("group", null);
        if (group != null) {
            return new ConfigResource(ConfigResource.Type.GROUP, group);
        }
        return new ConfigResource(ConfigResource.Type.BROKER, o.require("broker"));
    }

    // Admin steps in one JVM, one per stdin line: a JSON array of a command's arguments
    // (no --bootstrap), or {"args": [...], "lines": N, "within_ms": MS}, run again until it
    // prints N lines or MS pass (for what a broker applies a moment after it answers).
    // Each line printed carries "step": the step's index; a failed step prints
    // {"error": ..., "step": i} and the script goes on.
    static int script(KafkaTool.Opts o) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (Admin admin = Admin.create(KafkaTool.clientProps(o, adminDefaults()))) {
            int step = 0;
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode spec = KafkaTool.JSON.readTree(line);
                JsonNode argv = spec.isArray() ? spec : spec.get("args");
                String[] args = new String[argv.size()];
                for (int i = 0; i < args.length; i++) {
                    args[i] = argv.get(i).asText();
                }
                int want = spec.has("lines") ? spec.get("lines").asInt() : -1;
                long deadline = System.currentTimeMillis()
                        + (spec.has("within_ms") ? spec.get("within_ms").asLong() : 0);
                List<ObjectNode> lines;
                while (true) {
                    lines = new ArrayList<>();
                    KafkaTool.captured = lines;
                    try {
                        adminCommand(new KafkaTool.Opts(args), admin);
                    } catch (Exception e) {
                        lines.clear();
                        lines.add((ObjectNode) KafkaTool.JSON.createObjectNode().set("error", KafkaTool.errorNode(e)));
                    } finally {
                        KafkaTool.captured = null;
                    }
                    if (want < 0 || lines.size() == want || System.currentTimeMillis() >= deadline) {
                        break;
                    }
                    Thread.sleep(200);
                }
                for (ObjectNode n : lines) {
                    n.put("step", step);
                    KafkaTool.emit(n);
                }
                step++;
            }
        }
        return 0;
    }

    static int admin(KafkaTool.Opts o) throws Exception {
        try (Admin admin = Admin.create(KafkaTool.clientProps(o, adminDefaults()))) {
            return adminCommand(o, admin);
        }
    }

    static int adminCommand(KafkaTool.Opts o, Admin admin) throws Exception {
        switch (o.command) {
            case "create-topic": {
                int partitions = Integer.parseInt(o.get("partitions", "1"));
                short rf = Short.parseShort(o.get("replication-factor", "1"));
                List<NewTopic> topics = new ArrayList<>();
                for (String name : o.all("topic")) {
                    topics.add(new NewTopic(name, partitions, rf).configs(KafkaTool.pairs(o.all("config"))));
                }
                if (topics.isEmpty()) {
                    throw new IllegalArgumentException("missing option --topic");
                }
                var res = admin.createTopics(topics);
                res.all().get();
                for (NewTopic nt : topics) {
                    ObjectNode n = KafkaTool.JSON.createObjectNode();
                    n.put("topic", nt.name());
                    n.put("partitions", res.numPartitions(nt.name()).get());
                    n.put("replication_factor", res.replicationFactor(nt.name()).get());
                    n.put("topic_id", String.valueOf(res.topicId(nt.name()).get()));
                    KafkaTool.emit(n);
                }
                return 0;
            }
            case "delete-topic": {
                List<String> topics = o.all("topic");
                admin.deleteTopics(topics).all().get();
                for (String t : topics) {
                    ObjectNode n = KafkaTool.JSON.createObjectNode();
                    n.put("deleted", t);
                    KafkaTool.emit(n);
                }
                return 0;
            }
            case "list-topics": {
                ListTopicsOptions lto = new ListTopicsOptions().listInternal(o.flag("internal"));
                List<TopicListing> listings = new ArrayList<>(admin.listTopics(lto).listings().get());
                listings.sort((a, b) -> a.name().compareTo(b.name()));
                for (TopicListing l : listings) {
                    ObjectNode n = KafkaTool.JSON.createObjectNode();
                    n.put("topic", l.name());
                    n.put("internal", l.isInternal());
                    n.put("topic_id", String.valueOf(l.topicId()));
                    KafkaTool.emit(n);
                }
                return 0;
            }
            case "describe-topics": {
                List<String> topics = o.all("topic");
                Map<String, TopicDescription> res = admin.describeTopics(topics).allTopicNames().get();
                for (String t : topics) {
                    TopicDescription td = res.get(t);
                    ObjectNode n = KafkaTool.JSON.createObjectNode();
                    n.put("topic", td.name());
                    n.put("internal", td.isInternal());
                    n.put("topic_id", String.valueOf(td.topicId()));
                    ArrayNode ps = n.putArray("partitions");
                    for (TopicPartitionInfo p : td.partitions()) {
                        ObjectNode pn = ps.addObject();
                        pn.put("partition", p.partition());
                        pn.set("leader", KafkaTool.nodeJson(p.leader()));
                        ArrayNode rs = pn.putArray("replicas");
                        p.replicas().forEach(r -> rs.add(r.id()));
                        ArrayNode isr = pn.putArray("isr");
                        p.isr().forEach(r -> isr.add(r.id()));
                    }
                    KafkaTool.emit(n);
                }
                return 0;
            }
            case "describe-configs": {
                ConfigResource res = resource(o);
                Config cfg = admin.describeConfigs(List.of(res)).all().get().get(res);
                List<ConfigEntry> entries = new ArrayList<>(cfg.entries());
                entries.sort((a, b) -> a.name().compareTo(b.name()));
                for (ConfigEntry e : entries) {
                    ObjectNode n = KafkaTool.JSON.createObjectNode();
                    n.put("name", e.name());
                    n.put("value", e.value());
                    n.put("source", e.source().name());
                    n.put("read_only", e.isReadOnly());
                    n.put("default", e.isDefault());
                    n.put("sensitive", e.isSensitive());
                    KafkaTool.emit(n);
                }
                return 0;
            }
            case "alter-configs": {
                ConfigResource res = resource(o);
                List<AlterConfigOp> ops = new ArrayList<>();
                KafkaTool.pairs(o.all("set")).forEach((k, v) -> ops.add(
                        new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
                KafkaTool.pairs(o.all("append")).forEach((k, v) -> ops.add(
                        new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.APPEND)));
                KafkaTool.pairs(o.all("subtract")).forEach((k, v) -> ops.add(
                        new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SUBTRACT)));
                for (String k : o.all("delete")) {
                    ops.add(new AlterConfigOp(new ConfigEntry(k, null), AlterConfigOp.OpType.DELETE));
                }
                admin.incrementalAlterConfigs(Map.of(res, ops)).all().get();
                ObjectNode n = KafkaTool.JSON.createObjectNode();
                n.put("altered", res.name());
                n.put("ops", ops.size());
                KafkaTool.emit(n);
                return 0;
            }
            case "create-partitions": {
                String topic = o.require("topic");
                int total = Integer.parseInt(o.require("total"));
                admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(total))).all().get();
                ObjectNode n = KafkaTool.JSON.createObjectNode();
                n.put("topic", topic);
                n.put("total", total);
                KafkaTool.emit(n);
                return 0;
            }
            case "describe-cluster": {
                DescribeClusterResult r = admin.describeCluster();
                ObjectNode n = KafkaTool.JSON.createObjectNode();
                n.put("cluster_id", r.clusterId().get());
                n.set("controller", KafkaTool.nodeJson(r.controller().get()));
                ArrayNode nodes = n.putArray("nodes");
                for (Node node : r.nodes().get()) {
                    nodes.add(KafkaTool.nodeJson(node));
                }
                KafkaTool.emit(n);
                return 0;
            }
            case "list-groups":
                return Groups.list(o, admin);
            case "describe-share-groups":
                return Groups.describeShare(o, admin);
            case "share-group-offsets":
                return Groups.shareOffsets(o, admin);
            case "describe-producers":
                return Groups.describeProducers(o, admin);
            case "describe-groups": {
                List<String> groups = o.all("group");
                Map<String, ConsumerGroupDescription> res = admin.describeConsumerGroups(groups).all().get();
                for (String g : groups) {
                    ConsumerGroupDescription cg = res.get(g);
                    ObjectNode n = KafkaTool.JSON.createObjectNode();
                    n.put("group", cg.groupId());
                    n.put("type", String.valueOf(cg.type()));
                    n.put("state", String.valueOf(cg.groupState()));
                    n.put("assignor", cg.partitionAssignor());
                    n.set("coordinator", KafkaTool.nodeJson(cg.coordinator()));
                    ArrayNode ms = n.putArray("members");
                    for (MemberDescription m : cg.members()) {
                        ObjectNode mn = ms.addObject();
                        mn.put("member_id", m.consumerId());
                        mn.put("client_id", m.clientId());
                        mn.put("host", m.host());
                        m.groupInstanceId().ifPresent(i -> mn.put("group_instance_id", i));
                        ArrayNode a = mn.putArray("assignment");
                        for (TopicPartition tp : m.assignment().topicPartitions()) {
                            a.addObject().put("topic", tp.topic()).put("partition", tp.partition());
                        }
                    }
                    KafkaTool.emit(n);
                }
                return 0;
            }
            case "group-offsets": {
                String g = o.require("group");
                Map<TopicPartition, OffsetAndMetadata> offs =
                        admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata().get();
                List<TopicPartition> keys = new ArrayList<>(offs.keySet());
                keys.sort((a, b) -> a.topic().equals(b.topic())
                        ? Integer.compare(a.partition(), b.partition()) : a.topic().compareTo(b.topic()));
                for (TopicPartition tp : keys) {
                    OffsetAndMetadata om = offs.get(tp);
                    ObjectNode n = KafkaTool.JSON.createObjectNode();
                    n.put("topic", tp.topic());
                    n.put("partition", tp.partition());
                    if (om == null) {
                        n.putNull("offset");
                    } else {
                        n.put("offset", om.offset());
                        n.put("metadata", om.metadata());
                    }
                    KafkaTool.emit(n);
                }
                return 0;
            }
            case "alter-group-offsets": {
                String g = o.require("group");
                Map<TopicPartition, OffsetAndMetadata> offs = new LinkedHashMap<>();
                for (String item : o.all("offset")) {
                    int eq = item.indexOf('=');
                    offs.put(ClientCommands.parseTp(item.substring(0, eq)),
                            new OffsetAndMetadata(Long.parseLong(item.substring(eq + 1))));
                }
                admin.alterConsumerGroupOffsets(g, offs).all().get();
                ObjectNode n = KafkaTool.JSON.createObjectNode();
                n.put("altered", g);
                n.set("partitions", ClientCommands.tpsJson(offs.keySet()));
                KafkaTool.emit(n);
                return 0;
            }
            case "delete-group-offsets": {
                String g = o.require("group");
                Set<TopicPartition> parts = new HashSet<>();
                for (String item : o.all("partition")) {
                    parts.add(ClientCommands.parseTp(item));
                }
                var res = admin.deleteConsumerGroupOffsets(g, parts);
                for (TopicPartition tp : parts) {
                    ObjectNode n = KafkaTool.JSON.createObjectNode();
                    n.put("partition", tp.topic() + ":" + tp.partition());
                    try {
                        res.partitionResult(tp).get();
                        n.put("deleted", true);
                    } catch (ExecutionException e) {
                        n.put("deleted", false);
                        n.set("failure", KafkaTool.errorNode(e));
                    }
                    KafkaTool.emit(n);
                }
                return 0;
            }
            case "delete-groups": {
                List<String> groups = o.all("group");
                var res = admin.deleteConsumerGroups(groups).deletedGroups();
                for (String g : groups) {
                    ObjectNode n = KafkaTool.JSON.createObjectNode();
                    n.put("group", g);
                    try {
                        res.get(g).get();
                        n.put("deleted", true);
                    } catch (ExecutionException e) {
                        n.put("deleted", false);
                        n.set("failure", KafkaTool.errorNode(e));
                    }
                    KafkaTool.emit(n);
                }
                return 0;
            }
            case "list-offsets":
                return listOffsets(o, admin);
            case "alter-scram":
                return SecurityCommands.alterScram(o, admin);
            case "describe-scram":
                return SecurityCommands.describeScram(o, admin);
            case "create-acls":
                return SecurityCommands.createAcls(o, admin);
            case "describe-acls":
                return SecurityCommands.describeAcls(o, admin);
            case "delete-acls":
                return SecurityCommands.deleteAcls(o, admin);
            case "describe-transactions": {
                for (String id : o.all("transactional-id")) {
                    var d = admin.describeTransactions(List.of(id)).description(id).get();
                    ObjectNode n = KafkaTool.JSON.createObjectNode();
                    n.put("transactional_id", id);
                    n.put("state", d.state().toString());
                    n.put("producer_id", d.producerId());
                    n.put("producer_epoch", d.producerEpoch());
                    n.put("timeout_ms", d.transactionTimeoutMs());
                    ArrayNode ps = n.putArray("partitions");
                    for (TopicPartition tp : d.topicPartitions()) {
                        ps.addObject().put("topic", tp.topic()).put("partition", tp.partition());
                    }
                    KafkaTool.emit(n);
                }
                return 0;
            }
            default:
                throw new IllegalArgumentException("unknown command: " + o.command);
        }
    }
}
