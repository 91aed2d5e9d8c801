package dev.odradek.streams;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.KafkaFuture;

/**
 * The Admin client's calls for streams groups, one per run, for the tests: what a user
 * of kafka-streams-groups.sh gets. Arguments: bootstrap, a command and its operands:
 * <ul>
 *   <li>{@code list}: every streams group, "GROUP id type state";</li>
 *   <li>{@code describe id...}: "DESCRIBED id state=.. epoch=.. target=.. topology=..
 *       subtopologies=.. members=.." then "MEMBER process=.. epoch=.. active=..
 *       standby=.. target-active=.. endpoint=.. warmup=.. task-offsets=.. task-end-offsets=.." per member
 *       (offsets as subtopology_partition:offset), or "ERROR id class message";</li>
 *   <li>{@code offsets id}: "OFFSET topic partition offset" per committed offset;</li>
 *   <li>{@code alter-offsets id topic:partition:offset...}, {@code delete-offsets id
 *       topic:partition...}, {@code delete id...}: "OK" or "ERROR ..." per group or
 *       partition.</li>
 * </ul>
 */
public final class GroupAdmin {
    private GroupAdmin() {}

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        String command = args[1];
        List<String> operands = Arrays.asList(args).subList(2, args.length);
        try (Admin admin = Admin.create(props)) {
            switch (command) {
                case "list" -> list(admin);
                case "describe" -> describe(admin, operands);
                case "offsets" -> offsets(admin, operands.get(0));
                case "alter-offsets" -> alterOffsets(admin, operands.get(0), operands.subList(1, operands.size()));
                case "delete-offsets" -> deleteOffsets(admin, operands.get(0), operands.subList(1, operands.size()));
                case "delete" -> delete(admin, operands);
                default -> throw new IllegalArgumentException("unknown command " + command);
            }
        }
    }

    private static void list(Admin admin) throws Exception {
        for (GroupListing group : admin.listGroups(ListGroupsOptions.forStreamsGroups()).all().get(30, TimeUnit.SECONDS)) {
            System.out.println("GROUP " + group.groupId() + " " + group.type().map(Object::toString).orElse("?")
                    + " " + group.groupState().map(Object::toString).orElse("?"));
        }
    }

    private static String tasks(List<StreamsGroupMemberAssignment.TaskIds> tasks) {
        Map<String, List<Integer>> sorted = new TreeMap<>();
        for (StreamsGroupMemberAssignment.TaskIds ids : tasks) {
            List<Integer> partitions = new ArrayList<>(ids.partitions());
            partitions.sort(null);
            sorted.put(ids.subtopologyId(), partitions);
        }
        StringBuilder out = new StringBuilder();
        for (Map.Entry<String, List<Integer>> entry : sorted.entrySet()) {
            for (Integer partition : entry.getValue()) {
                out.append(out.length() == 0 ? "" : ",").append(entry.getKey()).append('_').append(partition);
            }
        }
        return out.length() == 0 ? "-" : out.toString();
    }

    private static String offsets(List<StreamsGroupMemberDescription.TaskOffset> offsets) {
        StringBuilder out = new StringBuilder();
        for (StreamsGroupMemberDescription.TaskOffset offset : offsets) {
            out.append(out.length() == 0 ? "" : ",")
                    .append(offset.subtopologyId()).append('_').append(offset.partition()).append(':').append(offset.offset());
        }
        return out.length() == 0 ? "-" : out.toString();
    }

    private static void describe(Admin admin, List<String> groups) throws Exception {
        Map<String, KafkaFuture<StreamsGroupDescription>> described = admin.describeStreamsGroups(groups).describedGroups();
        for (String id : groups) {
            StreamsGroupDescription group;
            try {
                group = described.get(id).get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                System.out.println("ERROR " + id + " " + e.getCause().getClass().getSimpleName() + " " + e.getCause().getMessage());
                continue;
            }
            Set<String> sources = new HashSet<>();
            for (StreamsGroupSubtopologyDescription sub : group.subtopologies()) {
                sources.addAll(sub.sourceTopics());
            }
            System.out.println("DESCRIBED " + group.groupId() + " state=" + group.groupState() + " epoch=" + group.groupEpoch()
                    + " target=" + group.targetAssignmentEpoch() + " topology=" + group.topologyEpoch()
                    + " subtopologies=" + group.subtopologies().size() + " sources=" + sources.size()
                    + " members=" + group.members().size());
            for (StreamsGroupMemberDescription member : group.members()) {
                System.out.println("MEMBER id=" + member.memberId() + " process=" + member.processId() + " epoch=" + member.memberEpoch()
                        + " active=" + tasks(member.assignment().activeTasks())
                        + " standby=" + tasks(member.assignment().standbyTasks())
                        + " target-active=" + tasks(member.targetAssignment().activeTasks())
                        + " target-standby=" + tasks(member.targetAssignment().standbyTasks())
                        + " endpoint=" + member.userEndpoint().map(e -> e.host() + ":" + e.port()).orElse("-")
                        + " classic=" + member.isClassic()
                        + " warmup=" + tasks(member.assignment().warmupTasks())
                        + " target-warmup=" + tasks(member.targetAssignment().warmupTasks())
                        + " task-offsets=" + offsets(member.taskOffsets())
                        + " task-end-offsets=" + offsets(member.taskEndOffsets()));
            }
        }
    }

    private static void offsets(Admin admin, String group) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets = admin
                .listStreamsGroupOffsets(Map.of(group, new ListStreamsGroupOffsetsSpec()))
                .partitionsToOffsetAndMetadata(group).get(30, TimeUnit.SECONDS);
        Map<String, Long> sorted = new TreeMap<>();
        offsets.forEach((tp, offset) -> sorted.put(tp.topic() + " " + tp.partition(), offset == null ? -1 : offset.offset()));
        sorted.forEach((tp, offset) -> System.out.println("OFFSET " + tp + " " + offset));
    }

    private static TopicPartition partition(String spec) {
        String[] parts = spec.split(":");
        return new TopicPartition(parts[0], Integer.parseInt(parts[1]));
    }

    private static void alterOffsets(Admin admin, String group, List<String> specs) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (String spec : specs) {
            offsets.put(partition(spec), new OffsetAndMetadata(Long.parseLong(spec.split(":")[2])));
        }
        try {
            admin.alterStreamsGroupOffsets(group, offsets).all().get(30, TimeUnit.SECONDS);
            System.out.println("OK");
        } catch (ExecutionException e) {
            System.out.println("ERROR " + e.getCause().getClass().getSimpleName() + " " + e.getCause().getMessage());
        }
    }

    private static void deleteOffsets(Admin admin, String group, List<String> specs) throws Exception {
        Set<TopicPartition> partitions = new HashSet<>();
        for (String spec : specs) {
            partitions.add(partition(spec));
        }
        try {
            admin.deleteStreamsGroupOffsets(group, partitions).all().get(30, TimeUnit.SECONDS);
            System.out.println("OK");
        } catch (ExecutionException e) {
            System.out.println("ERROR " + e.getCause().getClass().getSimpleName() + " " + e.getCause().getMessage());
        }
    }

    private static void delete(Admin admin, List<String> groups) throws Exception {
        Map<String, KafkaFuture<Void>> deleted = admin.deleteStreamsGroups(groups).deletedGroups();
        for (String id : groups) {
            try {
                deleted.get(id).get(30, TimeUnit.SECONDS);
                System.out.println("OK " + id);
            } catch (ExecutionException e) {
                System.out.println("ERROR " + id + " " + e.getCause().getClass().getSimpleName() + " " + e.getCause().getMessage());
            }
        }
    }
}
