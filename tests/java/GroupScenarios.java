// Consumer-group scenarios in one JVM (KafkaTool dispatches here), each consumer on its own
// thread, printing what happened as JSON lines for the test to check:
//   group-scenario   --topic T --group G --protocol classic|consumer [--partitions 4]
//                    [--records 10] [--more 5]: two members split the partitions, consume
//                    and commit; one leaves, the other takes over where the commits say.
//   every-group-type --topic T --group G: a classic, a consumer and a share group (G-classic,
//                    G-consumer, G-share) listed with each filter and described while their
//                    members run, and listed again once they left.

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

final class GroupScenarios {
    static final long WAIT_MS = 90_000;

    private GroupScenarios() {}

    // A KafkaConsumer polling on its own thread; it commits after every poll that brought
    // records, and leaves the group when stopped.
    static final class Member {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final List<ConsumerRecord<byte[], byte[]>> records = Collections.synchronizedList(new ArrayList<>());
        volatile Set<TopicPartition> assignment = Set.of();
        volatile int commits = 0;
        volatile boolean stop = false;
        volatile Throwable failure = null;
        final Thread thread;

        Member(String name, Properties props, String topic) {
            this.name = name;
            this.consumer = new KafkaConsumer<>(props);
            this.thread = new Thread(() -> loop(topic), name);
            thread.setDaemon(true);
            thread.start();
        }

        private void loop(String topic) {
            try {
                consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                        assignment = Set.copyOf(consumer.assignment());
                    }

                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                        assignment = Set.copyOf(consumer.assignment());
                    }
                });
                while (!stop) {
                    var recs = consumer.poll(Duration.ofMillis(100));
                    assignment = Set.copyOf(consumer.assignment());
                    if (!recs.isEmpty()) {
                        recs.forEach(records::add);
                        consumer.commitSync();
                        commits++;
                    }
                }
            } catch (Throwable t) {
                failure = t;
            } finally {
                consumer.close();
            }
        }

        void close() throws InterruptedException {
            stop = true;
            thread.join(60_000);
        }

        Set<Integer> partitions() {
            Set<Integer> out = new HashSet<>();
            assignment.forEach(tp -> out.add(tp.partition()));
            return out;
        }

        // partition -> offsets received, from the from-th record on
        ObjectNode received(int from) {
            Map<Integer, List<Long>> byPartition = new TreeMap<>();
            synchronized (records) {
                for (ConsumerRecord<byte[], byte[]> r : records.subList(from, records.size())) {
                    byPartition.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r.offset());
                }
            }
            ObjectNode n = KafkaTool.JSON.createObjectNode();
            byPartition.forEach((p, offs) -> {
                ArrayNode a = n.putArray(String.valueOf(p));
                offs.forEach(a::add);
            });
            return n;
        }
    }

    static void waitUntil(String what, BooleanSupplier done, Supplier<String> state, Member... members)
            throws InterruptedException {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (!done.getAsBoolean()) {
            for (Member m : members) {
                if (m.failure != null) {
                    throw new IllegalStateException(m.name + " failed while waiting for " + what, m.failure);
                }
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out after " + WAIT_MS + " ms waiting for " + what
                        + "; " + state.get());
            }
            Thread.sleep(50);
        }
    }

    static Properties consumerProps(KafkaTool.Opts o, String group, String clientId, String protocol) {
        Properties p = new Properties();
        p.put("bootstrap.servers", o.require("bootstrap"));
        p.put("group.id", group);
        p.put("client.id", clientId);
        p.put("group.protocol", protocol);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("request.timeout.ms", "10000");
        p.put("default.api.timeout.ms", "30000");
        if (protocol.equals("classic")) {
            p.put("heartbeat.interval.ms", "500");
            p.put("session.timeout.ms", "10000");
        }
        return p;
    }

    static void produce(String bootstrap, String topic, int partitions, int first, int count) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("acks", "all");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int part = 0; part < partitions; part++) {
                for (int i = first; i < first + count; i++) {
                    byte[] text = ("p" + part + "-" + i).getBytes();
                    producer.send(new ProducerRecord<>(topic, part, text, text));
                }
            }
            producer.flush();
        }
    }

    static void createTopic(Admin admin, String topic, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
    }

    static ArrayNode ints(Collection<Integer> xs) {
        ArrayNode a = KafkaTool.JSON.createArrayNode();
        new java.util.TreeSet<>(xs).forEach(a::add);
        return a;
    }

    static void event(String name, ObjectNode n) {
        n.put("event", name);
        KafkaTool.emit(n);
    }

    static int split(KafkaTool.Opts o) throws Exception {
        String topic = o.require("topic");
        String group = o.require("group");
        String protocol = o.require("protocol");
        int partitions = Integer.parseInt(o.get("partitions", "4"));
        int records = Integer.parseInt(o.get("records", "10"));
        int more = Integer.parseInt(o.get("more", "5"));
        String bootstrap = o.require("bootstrap");
        Set<Integer> all = new HashSet<>();
        for (int p = 0; p < partitions; p++) {
            all.add(p);
        }
        try (Admin admin = Admin.create(KafkaTool.clientProps(o, AdminCommands.adminDefaults()))) {
            createTopic(admin, topic, partitions);
            Member a = new Member("a", consumerProps(o, group, group + "-a", protocol), topic);
            Member b = null;
            try {
                waitUntil("a to hold every partition", () -> a.partitions().equals(all),
                        () -> "a holds " + a.partitions(), a);
                Member bb = new Member("b", consumerProps(o, group, group + "-b", protocol), topic);
                b = bb;
                waitUntil("a and b to split the partitions", () -> {
                    Set<Integer> pa = a.partitions();
                    Set<Integer> pb = bb.partitions();
                    Set<Integer> union = new HashSet<>(pa);
                    union.addAll(pb);
                    return !pa.isEmpty() && !pb.isEmpty() && union.equals(all)
                            && pa.size() + pb.size() == partitions;
                }, () -> "a holds " + a.partitions() + ", b holds " + bb.partitions(), a, bb);
                ObjectNode split = KafkaTool.JSON.createObjectNode();
                split.set("a", ints(a.partitions()));
                split.set("b", ints(bb.partitions()));
                event("split", split);

                produce(bootstrap, topic, partitions, 0, records);
                waitUntil("a and b to consume the first records",
                        () -> a.records.size() + bb.records.size() >= partitions * records
                                && a.commits + bb.commits > 0,
                        () -> "a has " + a.records.size() + ", b has " + bb.records.size(), a, bb);
                ObjectNode consumed = KafkaTool.JSON.createObjectNode();
                consumed.set("a", a.received(0));
                consumed.set("b", bb.received(0));
                event("consumed", consumed);

                bb.close();
                int before = a.records.size();
                waitUntil("a to hold every partition after b left", () -> a.partitions().equals(all),
                        () -> "a holds " + a.partitions(), a);
                produce(bootstrap, topic, partitions, records, more);
                waitUntil("a to consume the later records",
                        () -> a.records.size() >= before + partitions * more,
                        () -> "a has " + (a.records.size() - before) + " later records", a);
                a.close(); // after the commit of what it polled last
                ObjectNode resumed = KafkaTool.JSON.createObjectNode();
                resumed.set("a", a.received(before));
                event("resumed", resumed);
            } finally {
                a.close();
                if (b != null) {
                    b.close();
                }
            }

            Map<TopicPartition, OffsetAndMetadata> offsets =
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            ObjectNode committed = KafkaTool.JSON.createObjectNode();
            ObjectNode offs = committed.putObject("offsets");
            Map<Integer, Long> byPartition = new TreeMap<>();
            offsets.forEach((tp, om) -> byPartition.put(tp.partition(), om.offset()));
            byPartition.forEach((p, off) -> offs.put(String.valueOf(p), off));
            event("committed", committed);
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            ObjectNode desc = KafkaTool.JSON.createObjectNode();
            desc.put("type", String.valueOf(d.type()));
            desc.put("state", String.valueOf(d.groupState()));
            desc.put("members", d.members().size());
            event("described", desc);
        }
        return 0;
    }

    // ------------------------------------------------------------------ every group type

    static final class ShareMember {
        final KafkaShareConsumer<byte[], byte[]> consumer;
        volatile boolean stop = false;
        volatile Throwable failure = null;
        final Thread thread;

        ShareMember(KafkaTool.Opts o, String group, String topic) {
            Properties p = new Properties();
            p.put("bootstrap.servers", o.require("bootstrap"));
            p.put("group.id", group);
            p.put("client.id", group + "-a");
            p.put("key.deserializer", ByteArrayDeserializer.class.getName());
            p.put("value.deserializer", ByteArrayDeserializer.class.getName());
            consumer = new KafkaShareConsumer<>(p);
            thread = new Thread(() -> {
                try {
                    consumer.subscribe(List.of(topic));
                    while (!stop) {
                        consumer.poll(Duration.ofMillis(100));
                    }
                } catch (Throwable t) {
                    failure = t;
                } finally {
                    consumer.close();
                }
            }, "share");
            thread.setDaemon(true);
            thread.start();
        }

        void close() throws InterruptedException {
            stop = true;
            thread.join(60_000);
        }
    }

    static ArrayNode listed(Admin admin, ListGroupsOptions opts, Set<String> ours) throws Exception {
        List<GroupListing> gs = new ArrayList<>(admin.listGroups(opts).all().get());
        gs.sort((x, y) -> x.groupId().compareTo(y.groupId()));
        ArrayNode a = KafkaTool.JSON.createArrayNode();
        for (GroupListing g : gs) {
            if (ours.contains(g.groupId())) {
                a.add(Groups.listingJson(g));
            }
        }
        return a;
    }

    static ObjectNode describeConsumer(Admin admin, String group) throws InterruptedException {
        ObjectNode n = KafkaTool.JSON.createObjectNode();
        n.put("group", group);
        try {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            n.put("type", String.valueOf(d.type()));
            n.put("state", String.valueOf(d.groupState()));
            n.put("assignor", d.partitionAssignor());
            n.put("simple", d.isSimpleConsumerGroup());
            ArrayNode ms = n.putArray("members");
            for (MemberDescription m : d.members()) {
                ms.addObject().put("client_id", m.clientId())
                        .set("assignment", ClientCommands.tpsJson(m.assignment().topicPartitions()));
            }
        } catch (ExecutionException e) {
            n.set("failure", KafkaTool.errorNode(e));
        }
        return n;
    }

    static ObjectNode describeShare(Admin admin, String group) throws InterruptedException {
        ObjectNode n = KafkaTool.JSON.createObjectNode();
        n.put("group", group);
        try {
            ShareGroupDescription d = admin.describeShareGroups(List.of(group)).all().get().get(group);
            n.put("state", String.valueOf(d.groupState()));
            ArrayNode ms = n.putArray("members");
            d.members().forEach(m -> ms.addObject().put("client_id", m.clientId())
                    .set("assignment", ClientCommands.tpsJson(m.assignment().topicPartitions())));
        } catch (ExecutionException e) {
            n.set("failure", KafkaTool.errorNode(e));
        }
        return n;
    }

    static int everyType(KafkaTool.Opts o) throws Exception {
        String topic = o.require("topic");
        String group = o.require("group");
        String classic = group + "-classic";
        String consumer = group + "-consumer";
        String share = group + "-share";
        Set<String> ours = Set.of(classic, consumer, share);
        try (Admin admin = Admin.create(KafkaTool.clientProps(o, AdminCommands.adminDefaults()))) {
            createTopic(admin, topic, 1);
            produce(o.require("bootstrap"), topic, 1, 0, 1);
            Member c = new Member("classic", consumerProps(o, classic, classic + "-a", "classic"), topic);
            Member k = new Member("consumer", consumerProps(o, consumer, consumer + "-a", "consumer"), topic);
            ShareMember s = new ShareMember(o, share, topic);
            try {
                waitUntil("both consumers to commit their record",
                        () -> c.commits > 0 && k.commits > 0,
                        () -> "classic " + c.partitions() + ", consumer " + k.partitions(), c, k);
                waitUntil("the share member's assignment", () -> {
                    ObjectNode d = describeShareQuietly(admin, share);
                    return d.path("members").size() == 1
                            && d.path("members").get(0).path("assignment").size() == 1;
                }, () -> describeShareQuietly(admin, share).toString(), c, k);

                ObjectNode lists = KafkaTool.JSON.createObjectNode();
                lists.set("default", listed(admin, new ListGroupsOptions(), ours));
                lists.set("consumer_groups", listed(admin, ListGroupsOptions.forConsumerGroups(), ours));
                lists.set("share_groups", listed(admin, ListGroupsOptions.forShareGroups(), ours));
                for (GroupType t : List.of(GroupType.CLASSIC, GroupType.CONSUMER, GroupType.SHARE)) {
                    lists.set(t.name().toLowerCase(), listed(admin, new ListGroupsOptions().withTypes(Set.of(t)), ours));
                }
                lists.set("stable", listed(admin, new ListGroupsOptions().inGroupStates(Set.of(GroupState.STABLE)), ours));
                lists.set("empty", listed(admin, new ListGroupsOptions().inGroupStates(Set.of(GroupState.EMPTY)), ours));
                event("listed", lists);

                ObjectNode described = KafkaTool.JSON.createObjectNode();
                described.set("classic", describeConsumer(admin, classic));
                described.set("consumer", describeConsumer(admin, consumer));
                described.set("share", describeShare(admin, share));
                described.set("share_as_consumer", describeConsumer(admin, share));
                described.set("classic_as_share", describeShare(admin, classic));
                described.set("consumer_as_share", describeShare(admin, consumer));
                event("described", described);
            } finally {
                c.close();
                k.close();
                s.close();
            }
            if (s.failure != null) {
                throw new IllegalStateException("share member failed", s.failure);
            }
            waitUntil("every group to be empty", () -> {
                try {
                    ArrayNode a = listed(admin, new ListGroupsOptions(), ours);
                    int empty = 0;
                    for (var g : a) {
                        empty += g.path("state").asText().equals("Empty") ? 1 : 0;
                    }
                    return empty == 3;
                } catch (Exception e) {
                    return false;
                }
            }, () -> "not all empty");
            ObjectNode after = KafkaTool.JSON.createObjectNode();
            after.set("default", listed(admin, new ListGroupsOptions(), ours));
            event("left", after);
        }
        return 0;
    }

    static ObjectNode describeShareQuietly(Admin admin, String group) {
        try {
            return describeShare(admin, group);
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }
}
