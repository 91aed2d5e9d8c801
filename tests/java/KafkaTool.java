// KafkaTool: a small command-line driver around the Apache Kafka Java client, used by
// the Odradek test suite (tests/helpers/java.py compiles and runs it).
//
// Output: JSON lines on stdout. Records have no "event" field; events do
// ({"event": "assigned" | "revoked" | "done" ...}). A failure prints
// {"error": {"type": <exception class>, "message": ...}} and exits with status 2.
//
// Byte fields (keys, values, header values) are encoded as: null -> null, valid UTF-8 ->
// a JSON string, anything else -> {"b64": "<base64>"}. The same forms are accepted on input.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.common.Node;

public final class KafkaTool {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final PrintStream OUT = System.out;
    private static final Set<String> FLAGS =
            Set.of("stdin", "help", "until-end", "commit", "internal", "no-key");

    private static final String USAGE = String.join("\n",
            "usage: KafkaTool <command> --bootstrap HOST:PORT [options]",
            "",
            "commands:",
            "  produce            --topic T [--count N | --stdin] [--value-size B] [--no-key]",
            "                     [--pace-ms M: M ms between sends, progress events]",
            "                     [--partition P] [--acks A] [--compression C] [--idempotence BOOL]",
            "                     [--linger-ms MS] [--batch-size B] [--transaction commit|abort]",
            "                     stdin lines: {\"key\",\"value\",\"headers\":[[k,v]..],\"partition\",\"timestamp\"}",
            "  consume            --topic T... [--group G] [--from earliest|latest|OFFSET]",
            "                     [--partition P] [--max-records N] [--timeout-ms MS] [--until-end]",
            "                     [--isolation-level read_committed|read_uncommitted] [--commit]",
            "  offsets-for-times  --topic T --timestamp MS [--partition P]   (consumer API)",
            "  list-offsets       --topic T --spec earliest|latest|max-timestamp|MS [--partition P]",
            "                     [--isolation-level L]   (admin API)",
            "  create-topic       --topic T... [--partitions N] [--replication-factor R] [--config k=v]...",
            "  delete-topic       --topic T...",
            "  list-topics        [--internal]",
            "  describe-topics    --topic T...",
            "  describe-configs   --topic T | --group G | --broker ID",
            "  alter-configs      --topic T | --group G | --broker ID  [--set k=v]... [--delete k]...",
            "                     [--append k=v]... [--subtract k=v]...   (incremental)",
            "  create-partitions  --topic T --total N",
            "  describe-cluster",
            "  list-groups        [--type classic|consumer|share|streams|all]... [--state S]...",
            "                     (consumer groups, classic and consumer, without --type)",
            "  describe-groups    --group G...   (classic and consumer groups)",
            "  describe-share-groups --group G...",
            "  share-group-offsets --group G --topic T   (start offsets of a share group)",
            "  describe-producers --topic T [--partition P]",
            "  script             admin steps from stdin, one JSON array of arguments a line",
            "  group-scenario     --topic T --group G --protocol classic|consumer (GroupScenarios)",
            "  every-group-type   --topic T --group G (GroupScenarios)",
            "  share-scenario     --scenario NAME --topic T --group G (ShareScenarios)",
            "  group-offsets      --group G",
            "  describe-transactions --transactional-id ID...",
            "  txn-producer       --prop transactional.id=ID  (JSON commands on stdin, see txnProducer)",
            "  ctp                --input A --output B --group G --prop transactional.id=ID",
            "                     [--commit-every K] [--idle-ms MS] [--sleep-ms MS] [--timeout-ms MS]",
            "                     [--consumer-prop k=v]...   (consume-transform-produce, read_committed)",
            "  group-member       --topic T... --group G   (joins, prints assigned/revoked/lost",
            "                     events, stays; stdin commands: commit [T:P=O ...], assignment,",
            "                     close (leave and exit; also on EOF), halt (exit without leaving))",
            "  alter-group-offsets  --group G --offset T:P=O...",
            "  delete-group-offsets --group G --partition T:P...",
            "  delete-groups      --group G...",
            "  alter-scram        [--upsert USER:MECHANISM:ITERATIONS:PASSWORD]...",
            "                     [--delete USER:MECHANISM]...   (SCRAM-SHA-256 / SCRAM-SHA-512)",
            "  describe-scram     [--user U]...   (every user without --user)",
            "  create-acls        --acl SPEC...   SPEC: resource=TOPIC,name=N[,pattern=LITERAL]",
            "                     [,principal=User:ANONYMOUS][,host=*][,operation=ALL][,permission=ALLOW]",
            "  describe-acls      [--filter SPEC]   (omitted fields match any)",
            "  delete-acls        --filter SPEC...",
            "",
            "common options: --prop k=v (client property, repeatable), --bootstrap HOST:PORT",
            "output: JSON lines on stdout; errors as {\"error\": {...}} with exit status 2");

    private KafkaTool() {}

    // ------------------------------------------------------------------ arguments

    static final class Opts {
        final String command;
        final Map<String, List<String>> values = new HashMap<>();

        Opts(String[] args) {
            if (args.length == 0) {
                command = "help";
                return;
            }
            command = args[0];
            for (int i = 1; i < args.length; i++) {
                String a = args[i];
                if (!a.startsWith("--")) {
                    throw new IllegalArgumentException("unexpected argument: " + a);
                }
                String name = a.substring(2);
                String value;
                if (FLAGS.contains(name)) {
                    value = "true";
                } else {
                    if (i + 1 >= args.length) {
                        throw new IllegalArgumentException("option --" + name + " needs a value");
                    }
                    value = args[++i];
                }
                values.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
            }
        }

        String get(String name, String def) {
            List<String> v = values.get(name);
            return v == null || v.isEmpty() ? def : v.get(v.size() - 1);
        }

        String require(String name) {
            String v = get(name, null);
            if (v == null) {
                throw new IllegalArgumentException("missing option --" + name);
            }
            return v;
        }

        List<String> all(String name) {
            return values.getOrDefault(name, Collections.emptyList());
        }

        boolean flag(String name) {
            return Boolean.parseBoolean(get(name, "false"));
        }

        Integer intOrNull(String name) {
            String v = get(name, null);
            return v == null ? null : Integer.valueOf(v);
        }
    }

    static Map<String, String> pairs(List<String> items) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String item : items) {
            int eq = item.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("expected key=value, got: " + item);
            }
            out.put(item.substring(0, eq), item.substring(eq + 1));
        }
        return out;
    }

    static Properties clientProps(Opts o, Map<String, String> defaults) {
        Properties p = new Properties();
        p.put("bootstrap.servers", o.require("bootstrap"));
        p.putAll(defaults);
        p.putAll(pairs(o.all("prop")));
        return p;
    }

    // ------------------------------------------------------------------ JSON helpers

    // While a script step runs, what it prints is kept here instead (see script()).
    static List<ObjectNode> captured = null;

    static void emit(JsonNode node) {
        if (captured != null && node instanceof ObjectNode) {
            captured.add((ObjectNode) node);
            return;
        }
        try {
            OUT.println(JSON.writeValueAsString(node));
            OUT.flush();
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    static void putBytes(ObjectNode node, String field, byte[] data) {
        if (data == null) {
            node.putNull(field);
            return;
        }
        try {
            String text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(data))
                    .toString();
            node.put(field, text);
        } catch (CharacterCodingException e) {
            node.putObject(field).put("b64", Base64.getEncoder().encodeToString(data));
        }
    }

    static void addBytes(ArrayNode node, byte[] data) {
        ObjectNode tmp = JSON.createObjectNode();
        putBytes(tmp, "x", data);
        node.add(tmp.get("x"));
    }

    static byte[] readBytes(JsonNode n) {
        if (n == null || n.isNull()) {
            return null;
        }
        if (n.isObject() && n.has("b64")) {
            return Base64.getDecoder().decode(n.get("b64").asText());
        }
        if (n.isTextual()) {
            return n.asText().getBytes(StandardCharsets.UTF_8);
        }
        return n.toString().getBytes(StandardCharsets.UTF_8);
    }

    static ObjectNode errorNode(Throwable t) {
        Throwable c = t;
        while ((c instanceof ExecutionException || c instanceof java.util.concurrent.CompletionException)
                && c.getCause() != null) {
            c = c.getCause();
        }
        ObjectNode err = JSON.createObjectNode();
        err.put("type", c.getClass().getName());
        err.put("message", String.valueOf(c.getMessage()));
        return err;
    }

    static ObjectNode nodeJson(Node n) {
        if (n == null) {
            return null;
        }
        ObjectNode o = JSON.createObjectNode();
        o.put("id", n.id());
        o.put("host", n.host());
        o.put("port", n.port());
        return o;
    }

    // ------------------------------------------------------------------ main

    public static void main(String[] args) {
        int status;
        try {
            Opts o = new Opts(args);
            switch (o.command) {
                case "help":
                case "--help":
                case "-h":
                    OUT.println(USAGE);
                    status = 0;
                    break;
                case "produce":
                    status = ClientCommands.produce(o);
                    break;
                case "consume":
                    status = ClientCommands.consume(o);
                    break;
                case "offsets-for-times":
                    status = ClientCommands.offsetsForTimes(o);
                    break;
                case "txn-producer":
                    status = TxnCommands.txnProducer(o);
                    break;
                case "ctp":
                    status = TxnCommands.ctp(o);
                    break;
                case "group-member":
                    status = ClientCommands.groupMember(o);
                    break;
                case "script":
                    status = AdminCommands.script(o);
                    break;
                case "group-scenario":
                    status = GroupScenarios.split(o);
                    break;
                case "every-group-type":
                    status = GroupScenarios.everyType(o);
                    break;
                case "share-scenario":
                    status = ShareScenarios.run(o);
                    break;
                case "schema-bytes":
                    status = SchemaBytes.run();
                    break;
                default:
                    if (o.flag("help")) {
                        OUT.println(USAGE);
                        status = 0;
                    } else {
                        status = AdminCommands.admin(o);
                    }
            }
        } catch (IllegalArgumentException e) {
            ObjectNode n = JSON.createObjectNode();
            n.set("error", errorNode(e));
            emit(n);
            System.err.println(e.getMessage());
            System.err.println(USAGE);
            status = 64;
        } catch (Throwable t) {
            ObjectNode n = JSON.createObjectNode();
            n.set("error", errorNode(t));
            emit(n);
            t.printStackTrace();
            status = 2;
        }
        OUT.flush();
        System.exit(status);
    }
}
