import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.List;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.DeleteGroupsResponseData;
import org.apache.kafka.common.message.TxnOffsetCommitRequestData;
import org.apache.kafka.common.message.TxnOffsetCommitResponseData;
import org.apache.kafka.common.message.UnregisterControllerRequestData;
import org.apache.kafka.common.message.UnregisterControllerResponseData;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.MessageUtil;

/**
 * The bytes Kafka 4.4's own message classes write for the message versions whose classes
 * Odradek carries itself (protocol/schemas/), one JSON line each, for
 * tests/unit/test_own_schemas.py to read back and write again.
 */
final class SchemaBytes {
    private SchemaBytes() {}

    static final Uuid TOPIC_ID = Uuid.fromString("AAAAAAAAAAAAAAAAAAAAAQ");

    static int run() {
        ApiVersionsRequestData apiVersions = new ApiVersionsRequestData()
                .setClientSoftwareName("odradek-test")
                .setClientSoftwareVersion("1.0")
                .setClusterId("cluster-a")
                .setNodeId(7);
        print(18, 5, "request", apiVersions);

        DeleteGroupsResponseData deleteGroups = new DeleteGroupsResponseData().setThrottleTimeMs(3);
        deleteGroups.results().add(new DeleteGroupsResponseData.DeletableGroupResult()
                .setGroupId("g-1").setErrorCode((short) 69).setErrorMessage("not empty"));
        deleteGroups.results().add(new DeleteGroupsResponseData.DeletableGroupResult()
                .setGroupId("g-2").setErrorCode((short) 0).setErrorMessage(null));
        print(42, 3, "response", deleteGroups);

        TxnOffsetCommitRequestData commit = new TxnOffsetCommitRequestData()
                .setTransactionalId("txn-1").setGroupId("g-1").setProducerId(42L)
                .setProducerEpoch((short) 3).setGenerationIdOrMemberEpoch(5).setMemberId("m-1")
                .setGroupInstanceId(null)
                .setTopics(List.of(new TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic()
                        .setTopicId(TOPIC_ID)
                        .setPartitions(List.of(
                                new TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition()
                                        .setPartitionIndex(2).setCommittedOffset(100L)
                                        .setCommittedLeaderEpoch(4).setCommittedMetadata("meta")))));
        print(28, 6, "request", commit);

        TxnOffsetCommitResponseData committed = new TxnOffsetCommitResponseData()
                .setThrottleTimeMs(0)
                .setTopics(List.of(new TxnOffsetCommitResponseData.TxnOffsetCommitResponseTopic()
                        .setTopicId(TOPIC_ID)
                        .setPartitions(List.of(
                                new TxnOffsetCommitResponseData.TxnOffsetCommitResponsePartition()
                                        .setPartitionIndex(2).setErrorCode((short) 100)))));
        print(28, 6, "response", committed);

        print(94, 0, "request", new UnregisterControllerRequestData().setControllerId(3001));
        print(94, 0, "response", new UnregisterControllerResponseData()
                .setThrottleTimeMs(5).setErrorCode((short) 136)
                .setErrorMessage("Controller ID 3001 is not currently registered."));
        return 0;
    }

    private static void print(int apiKey, int version, String kind, ApiMessage message) {
        ByteBuffer buffer = MessageUtil.toByteBufferAccessor(message, (short) version).buffer();
        byte[] raw = MessageUtil.byteBufferToArray(buffer);
        ObjectNode line = KafkaTool.JSON.createObjectNode();
        line.put("event", "bytes");
        line.put("api_key", apiKey);
        line.put("version", version);
        line.put("kind", kind);
        line.put("hex", HexFormat.of().formatHex(raw));
        KafkaTool.emit(line);
    }
}
