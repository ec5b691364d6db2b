#!/usr/bin/env python3
"""Generate apiserver/src/protobuf/schema.json: the protobuf field numbers of the served kinds.

kubectl's typed clients send request bodies as Kubernetes protobuf. The field numbers and types
come from the `k8s-pb` crate (prost types generated from upstream's .proto files); the exact JSON
field names come from the `k8s-openapi` crate. Both are dependencies of the workspace, read from
cargo's registry. Run after changing either version:

    python3 tools/gen-protobuf-schema.py
"""
import glob, json, os, re, sys

REG = glob.glob(os.path.expanduser("~/.cargo/registry/src/*/"))
def crate_dir(name):
    hits = sorted(d for r in REG for d in glob.glob(os.path.join(r, name)))
    if not hits:
        sys.exit(f"{name} not found in the cargo registry: run `cargo fetch` first")
    return hits[-1]

PB = crate_dir("k8s-pb-0.*")
OA = crate_dir("k8s-openapi-0.29.*")

# snake_case field name -> JSON name, from k8s-openapi's deserializers.
json_names = {}
for path in glob.glob(os.path.join(OA, "src/v1_36/**/*.rs"), recursive=True):
    for jn, snake in re.findall(r'"([A-Za-z0-9$_.-]+)" => Field::Key_([a-z0-9_]+),', open(path).read()):
        json_names.setdefault(snake.rstrip("_"), jn)
# prost splits acronyms its own way (`nonResourceURLs` is `non_resource_ur_ls` in k8s-pb,
# `non_resource_urls` in k8s-openapi): also look names up without their underscores.
loose_names = {}
for snake, jn in json_names.items():
    loose_names.setdefault(snake.replace("_", ""), jn)

def camel(snake):
    parts = snake.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])

# Go structs embedded with `json:",inline"`: their fields are the parent's in JSON. The JSON name
# "" tells the decoder to merge the embedded message into its parent.
INLINE = {"volume_source", "ingress_rule_value", "local_object_reference", "ephemeral_container_common"}
INLINE_IN = {("api/core/v1/Probe", "handler")}

ATTR = re.compile(r'#\[prost\(([^)]*)\)\]')
messages = {}
for path in glob.glob(os.path.join(PB, "src/**/mod.rs"), recursive=True):
    module = os.path.relpath(os.path.dirname(path), os.path.join(PB, "src")).replace(os.sep, "/")
    lines = open(path).read().split("\n")
    current = None
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        m = re.match(r'pub struct (\w+) \{', line)
        if m:
            current = f"{module}/{m.group(1)}"
            messages[current] = []
        elif line == "}":
            current = None
        elif current and (a := ATTR.match(line)):
            attr = a.group(1)
            i += 1
            decl = lines[i].strip()
            while not (decl.endswith(",") and decl.count("<") == decl.count(">")):
                i += 1
                decl = decl + " " + lines[i].strip()
            fm = re.match(r'pub (r#)?(\w+):\s*(.*),$', decl)
            name, rtype = fm.group(2), fm.group(3)
            tag = int(re.search(r'tag = "(\d+)"', attr).group(1))
            if attr.startswith("btree_map"):
                key, value = re.search(r'btree_map = "(\w+), (\w+)"', attr).groups()
                kind, repeated = "map", False
                scalar = value
            else:
                scalar = attr.split(",")[0].strip().split(" ")[0]
                kind = scalar
                repeated = " repeated" in attr or attr.split(",")[1].strip() == "repeated"
            ref = None
            if scalar == "message":
                # The last path in the type expression, resolved against this module.
                paths = re.findall(r'((?:super::)*(?:[a-z_0-9]+::)*[A-Z]\w*)', rtype)
                cands = [p for p in paths if p.split("::")[-1] not in ("Option", "Vec", "Box", "BTreeMap", "String")]
                if not cands:
                    sys.exit(f"cannot resolve {rtype!r} in {current}")
                target = cands[-1]
                parts = target.split("::")
                base = module.split("/")
                while parts and parts[0] == "super":
                    parts.pop(0)
                    base = base[:-1]
                ref = "/".join(base + parts)
            jn = json_names.get(name) or loose_names.get(name.replace("_", ""), camel(name))
            if name in INLINE or (current, name) in INLINE_IN:
                jn = ""
            messages[current].append([tag, jn, kind if kind != "map" else "map:" + scalar, ref, repeated])
        i += 1

ROOTS = {
    "v1/Pod": "api/core/v1/Pod", "v1/Node": "api/core/v1/Node", "v1/Namespace": "api/core/v1/Namespace",
    "v1/Event": "api/core/v1/Event", "v1/ConfigMap": "api/core/v1/ConfigMap", "v1/Binding": "api/core/v1/Binding",
    "v1/ResourceQuota": "api/core/v1/ResourceQuota",
    "v1/Service": "api/core/v1/Service", "v1/Endpoints": "api/core/v1/Endpoints",
    "v1/PersistentVolume": "api/core/v1/PersistentVolume",
    "v1/PersistentVolumeClaim": "api/core/v1/PersistentVolumeClaim",
    "v1/ReplicationController": "api/core/v1/ReplicationController",
    "apps/v1/StatefulSet": "api/apps/v1/StatefulSet",
    "batch/v1/Job": "api/batch/v1/Job", "batch/v1/CronJob": "api/batch/v1/CronJob",
    "storage.k8s.io/v1/StorageClass": "api/storage/v1/StorageClass",
    "discovery.k8s.io/v1/EndpointSlice": "api/discovery/v1/EndpointSlice",
    "apps/v1/Deployment": "api/apps/v1/Deployment", "apps/v1/ReplicaSet": "api/apps/v1/ReplicaSet",
    "apps/v1/DaemonSet": "api/apps/v1/DaemonSet", "apps/v1/ControllerRevision": "api/apps/v1/ControllerRevision",
    "coordination.k8s.io/v1/Lease": "api/coordination/v1/Lease", "events.k8s.io/v1/Event": "api/events/v1/Event",
    "policy/v1/PodDisruptionBudget": "api/policy/v1/PodDisruptionBudget", "policy/v1/Eviction": "api/policy/v1/Eviction",
    "scheduling.k8s.io/v1/PriorityClass": "api/scheduling/v1/PriorityClass", "autoscaling/v1/Scale": "api/autoscaling/v1/Scale",
    "autoscaling/v1/HorizontalPodAutoscaler": "api/autoscaling/v1/HorizontalPodAutoscaler",
    "autoscaling/v2/HorizontalPodAutoscaler": "api/autoscaling/v2/HorizontalPodAutoscaler",
    "meta.k8s.io/v1/DeleteOptions": "apimachinery/pkg/apis/meta/v1/DeleteOptions",
    "v1/DeleteOptions": "apimachinery/pkg/apis/meta/v1/DeleteOptions",
    "v1/Secret": "api/core/v1/Secret", "v1/ServiceAccount": "api/core/v1/ServiceAccount",
    "authentication.k8s.io/v1/TokenRequest": "api/authentication/v1/TokenRequest",
    "networking.k8s.io/v1/Ingress": "api/networking/v1/Ingress",
    "networking.k8s.io/v1/IngressClass": "api/networking/v1/IngressClass",
    "networking.k8s.io/v1/NetworkPolicy": "api/networking/v1/NetworkPolicy",
    "rbac.authorization.k8s.io/v1/Role": "api/rbac/v1/Role",
    "rbac.authorization.k8s.io/v1/ClusterRole": "api/rbac/v1/ClusterRole",
    "rbac.authorization.k8s.io/v1/RoleBinding": "api/rbac/v1/RoleBinding",
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": "api/rbac/v1/ClusterRoleBinding",
    "authorization.k8s.io/v1/SubjectAccessReview": "api/authorization/v1/SubjectAccessReview",
    "authorization.k8s.io/v1/SelfSubjectAccessReview": "api/authorization/v1/SelfSubjectAccessReview",
    "authorization.k8s.io/v1/LocalSubjectAccessReview": "api/authorization/v1/LocalSubjectAccessReview",
    "authorization.k8s.io/v1/SelfSubjectRulesReview": "api/authorization/v1/SelfSubjectRulesReview",
    "authentication.k8s.io/v1/SelfSubjectReview": "api/authentication/v1/SelfSubjectReview",
}
# Types with their own JSON form: decoded by hand, their fields are not needed beyond these.
SPECIAL = {"apimachinery/pkg/apis/meta/v1/Time", "apimachinery/pkg/apis/meta/v1/MicroTime",
           "apimachinery/pkg/api/resource/Quantity", "apimachinery/pkg/util/intstr/IntOrString",
           "apimachinery/pkg/runtime/RawExtension", "apimachinery/pkg/apis/meta/v1/Duration",
           "apimachinery/pkg/apis/meta/v1/FieldsV1"}
needed, todo = {}, list(ROOTS.values())
while todo:
    t = todo.pop()
    if t in needed or t in SPECIAL:
        continue
    if t not in messages:
        sys.exit(f"message {t} not found in k8s-pb")
    needed[t] = messages[t]
    todo.extend(f[3] for f in messages[t] if f[3])
out = {"kinds": ROOTS, "messages": dict(sorted(needed.items()))}
dest = os.path.join(os.path.dirname(__file__), "..", "apiserver", "src", "protobuf", "schema.json")
with open(dest, "w") as f:
    json.dump(out, f, separators=(",", ":"), sort_keys=False)
    f.write("\n")
print(f"{len(needed)} messages written to {os.path.normpath(dest)}")
