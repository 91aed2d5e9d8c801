// KafkaTool's security admin commands: SCRAM credentials and ACLs.

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;

final class SecurityCommands {
    private SecurityCommands() {
    }

    // ------------------------------------------------------------------ SCRAM credentials

    static int alterScram(KafkaTool.Opts o, Admin admin) throws Exception {
        List<org.apache.kafka.clients.admin.UserScramCredentialAlteration> changes = new ArrayList<>();
        for (String item : o.all("upsert")) {
            String[] f = item.split(":", 4);
            if (f.length != 4) {
                throw new IllegalArgumentException("expected USER:MECHANISM:ITERATIONS:PASSWORD, got: " + item);
            }
            var info = new org.apache.kafka.clients.admin.ScramCredentialInfo(
                    org.apache.kafka.clients.admin.ScramMechanism.fromMechanismName(f[1]), Integer.parseInt(f[2]));
            changes.add(new org.apache.kafka.clients.admin.UserScramCredentialUpsertion(f[0], info, f[3]));
        }
        for (String item : o.all("delete")) {
            String[] f = item.split(":", 2);
            if (f.length != 2) {
                throw new IllegalArgumentException("expected USER:MECHANISM, got: " + item);
            }
            changes.add(new org.apache.kafka.clients.admin.UserScramCredentialDeletion(
                    f[0], org.apache.kafka.clients.admin.ScramMechanism.fromMechanismName(f[1])));
        }
        var results = admin.alterUserScramCredentials(changes).values();
        List<String> users = new ArrayList<>(results.keySet());
        Collections.sort(users);
        for (String user : users) {
            ObjectNode n = KafkaTool.JSON.createObjectNode();
            n.put("user", user);
            try {
                results.get(user).get();
                n.put("altered", true);
            } catch (ExecutionException e) {
                n.put("altered", false);
                n.set("failure", KafkaTool.errorNode(e));
            }
            KafkaTool.emit(n);
        }
        return 0;
    }

    static int describeScram(KafkaTool.Opts o, Admin admin) throws Exception {
        List<String> asked = o.all("user");
        var result = asked.isEmpty()
                ? admin.describeUserScramCredentials()
                : admin.describeUserScramCredentials(asked);
        List<String> users = asked.isEmpty() ? new ArrayList<>(result.users().get()) : asked;
        for (String user : users) {
            ObjectNode n = KafkaTool.JSON.createObjectNode();
            n.put("user", user);
            try {
                var description = result.description(user).get();
                ArrayNode creds = n.putArray("credentials");
                // by mechanism: Kafka's order comes from a hash map, another at each start
                var infos = new ArrayList<>(description.credentialInfos());
                infos.sort((a, b) -> a.mechanism().mechanismName().compareTo(b.mechanism().mechanismName()));
                for (var info : infos) {
                    creds.addObject().put("mechanism", info.mechanism().mechanismName())
                            .put("iterations", info.iterations());
                }
            } catch (ExecutionException e) {
                n.set("failure", KafkaTool.errorNode(e));
            }
            KafkaTool.emit(n);
        }
        return 0;
    }

    // ------------------------------------------------------------------ ACLs

    static Map<String, String> aclSpec(String spec) {
        Map<String, String> f = new HashMap<>();
        for (String part : spec.isEmpty() ? new String[0] : spec.split(",")) {
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("expected key=value in ACL spec, got: " + part);
            }
            f.put(part.substring(0, eq), part.substring(eq + 1));
        }
        return f;
    }

    static org.apache.kafka.common.acl.AclBindingFilter aclFilter(String spec) {
        Map<String, String> f = aclSpec(spec);
        var pattern = new org.apache.kafka.common.resource.ResourcePatternFilter(
                org.apache.kafka.common.resource.ResourceType.fromString(f.getOrDefault("resource", "ANY")),
                f.get("name"),
                org.apache.kafka.common.resource.PatternType.fromString(f.getOrDefault("pattern", "ANY")));
        var entry = new org.apache.kafka.common.acl.AccessControlEntryFilter(
                f.get("principal"),
                f.get("host"),
                org.apache.kafka.common.acl.AclOperation.fromString(f.getOrDefault("operation", "ANY")),
                org.apache.kafka.common.acl.AclPermissionType.fromString(f.getOrDefault("permission", "ANY")));
        return new org.apache.kafka.common.acl.AclBindingFilter(pattern, entry);
    }

    // defaults: pattern LITERAL, principal User:ANONYMOUS, host *, operation ALL, permission ALLOW
    static org.apache.kafka.common.acl.AclBinding aclBinding(String spec) {
        Map<String, String> f = aclSpec(spec);
        return new org.apache.kafka.common.acl.AclBinding(
                new org.apache.kafka.common.resource.ResourcePattern(
                        org.apache.kafka.common.resource.ResourceType.fromString(f.get("resource")),
                        f.get("name"),
                        org.apache.kafka.common.resource.PatternType.fromString(f.getOrDefault("pattern", "LITERAL"))),
                new org.apache.kafka.common.acl.AccessControlEntry(
                        f.getOrDefault("principal", "User:ANONYMOUS"),
                        f.getOrDefault("host", "*"),
                        org.apache.kafka.common.acl.AclOperation.fromString(f.getOrDefault("operation", "ALL")),
                        org.apache.kafka.common.acl.AclPermissionType.fromString(
                                f.getOrDefault("permission", "ALLOW"))));
    }

    static ObjectNode aclJson(org.apache.kafka.common.acl.AclBinding b) {
        ObjectNode n = KafkaTool.JSON.createObjectNode();
        n.put("resource_type", b.pattern().resourceType().name());
        n.put("name", b.pattern().name());
        n.put("pattern_type", b.pattern().patternType().name());
        n.put("principal", b.entry().principal());
        n.put("host", b.entry().host());
        n.put("operation", b.entry().operation().name());
        n.put("permission", b.entry().permissionType().name());
        return n;
    }

    static int createAcls(KafkaTool.Opts o, Admin admin) throws Exception {
        List<org.apache.kafka.common.acl.AclBinding> bindings = new ArrayList<>();
        for (String spec : o.all("acl")) {
            bindings.add(aclBinding(spec));
        }
        var results = admin.createAcls(bindings).values();
        for (var binding : bindings) {
            ObjectNode n = aclJson(binding);
            try {
                results.get(binding).get();
                n.put("created", true);
            } catch (ExecutionException e) {
                n.put("created", false);
                n.set("failure", KafkaTool.errorNode(e));
            }
            KafkaTool.emit(n);
        }
        return 0;
    }

    static int describeAcls(KafkaTool.Opts o, Admin admin) throws Exception {
        List<ObjectNode> found = new ArrayList<>();
        for (var binding : admin.describeAcls(aclFilter(o.get("filter", ""))).values().get()) {
            found.add(aclJson(binding));
        }
        // the same order on every broker: by resource, then principal, then operation
        found.sort((a, b) -> a.toString().compareTo(b.toString()));
        found.forEach(KafkaTool::emit);
        return 0;
    }

    static int deleteAcls(KafkaTool.Opts o, Admin admin) throws Exception {
        List<org.apache.kafka.common.acl.AclBindingFilter> filters = new ArrayList<>();
        for (String spec : o.all("filter")) {
            filters.add(aclFilter(spec));
        }
        var results = admin.deleteAcls(filters).values();
        for (var filter : filters) { // in the order given (the results are a hash map)
            for (var deleted : results.get(filter).get().values()) {
                ObjectNode n = aclJson(deleted.binding());
                n.put("deleted", deleted.exception() == null);
                KafkaTool.emit(n);
            }
        }
        return 0;
    }

}
