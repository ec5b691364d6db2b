//! Table tests of CRD validation rules: upstream's documented examples, rendered as upstream
//! renders the errors.

use serde_json::{json, Value};

use super::{compile_errors, validate};

fn render(errs: Vec<crate::registry::field::FieldError>) -> Vec<String> {
    errs.iter().map(|e| e.to_string()).collect()
}

/// A root object schema whose `spec` has `props` and the rules `rules`.
fn spec_schema(props: Value, rules: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {
        "type": "object", "properties": props, "x-kubernetes-validations": rules}}})
}

fn replicas() -> Value {
    json!({"minReplicas": {"type": "integer"}, "replicas": {"type": "integer"},
           "maxReplicas": {"type": "integer"}})
}

struct Case {
    name: &'static str,
    schema: Value,
    obj: Value,
    old: Option<Value>,
    want: Vec<&'static str>,
}

fn case(name: &'static str, schema: Value, obj: Value, want: Vec<&'static str>) -> Case {
    Case {
        name,
        schema,
        obj,
        old: None,
        want,
    }
}

fn update(
    name: &'static str,
    schema: Value,
    obj: Value,
    old: Value,
    want: Vec<&'static str>,
) -> Case {
    Case {
        name,
        schema,
        obj,
        old: Some(old),
        want,
    }
}

fn run(cases: Vec<Case>) {
    for c in cases {
        let got = render(validate(&c.schema, &c.obj, c.old.as_ref()));
        assert_eq!(got, c.want, "case {}", c.name);
    }
}

#[test]
fn docs_examples() {
    let both = json!([
        {"rule": "self.minReplicas <= self.replicas"},
        {"rule": "self.replicas <= self.maxReplicas",
         "message": "replicas should be smaller than or equal to maxReplicas."}]);
    run(vec![
        case("valid", spec_schema(replicas(), both.clone()),
            json!({"spec": {"minReplicas": 0, "replicas": 3, "maxReplicas": 5}}), vec![]),
        case("both fail", spec_schema(replicas(), both.clone()),
            json!({"spec": {"minReplicas": 5, "replicas": 20, "maxReplicas": 10}}),
            vec!["spec: Invalid value: \"object\": replicas should be smaller than or equal to maxReplicas."]),
        case("default message", spec_schema(replicas(), both),
            json!({"spec": {"minReplicas": 5, "replicas": 3, "maxReplicas": 10}}),
            vec!["spec: Invalid value: \"object\": failed rule: self.minReplicas <= self.replicas"]),
        case("messageExpression", spec_schema(replicas(), json!([{
                "rule": "self.replicas <= self.maxReplicas",
                "messageExpression": "'replicas must be at most ' + string(self.maxReplicas)"}])),
            json!({"spec": {"replicas": 20, "maxReplicas": 10}}),
            vec!["spec: Invalid value: \"object\": replicas must be at most 10"]),
        case("messageExpression that fails falls back on message", spec_schema(replicas(), json!([{
                "rule": "self.replicas <= self.maxReplicas", "message": "too many",
                "messageExpression": "self.nope"}])),
            json!({"spec": {"replicas": 20, "maxReplicas": 10}}),
            vec!["spec: Invalid value: \"object\": too many"]),
        case("reason and fieldPath", spec_schema(replicas(), json!([{
                "rule": "self.replicas <= self.maxReplicas", "message": "too many",
                "reason": "FieldValueForbidden", "fieldPath": ".replicas"}])),
            json!({"spec": {"replicas": 20, "maxReplicas": 10}}),
            vec!["spec.replicas: Forbidden: too many"]),
        case("reason Required", spec_schema(replicas(), json!([{
                "rule": "has(self.replicas)", "message": "replicas is needed",
                "reason": "FieldValueRequired", "fieldPath": ".replicas"}])),
            json!({"spec": {"maxReplicas": 10}}),
            vec!["spec.replicas: Required value: replicas is needed"]),
        case("reason Duplicate", spec_schema(replicas(), json!([{
                "rule": "self.minReplicas != self.maxReplicas", "reason": "FieldValueDuplicate"}])),
            json!({"spec": {"minReplicas": 1, "maxReplicas": 1}}),
            vec!["spec: Duplicate value: \"object\""]),
        case("rule at the root", json!({"type": "object", "properties": {"spec": {
                "type": "object", "properties": replicas()}},
                "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('cron-')"}]}),
            json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "web"},
                   "spec": {"replicas": 1}}),
            vec!["<nil>: Invalid value: \"object\": failed rule: self.metadata.name.startsWith('cron-')"]),
        case("absent field: its rules don't run", spec_schema(json!({"opt": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self == 'x'"}]}}), json!([])),
            json!({"spec": {}}), vec![]),
        case("no such key", spec_schema(replicas(), json!([{"rule": "self.replicas > 0"}])),
            json!({"spec": {"maxReplicas": 10}}),
            vec!["spec: Invalid value: \"object\": no such key: replicas evaluating rule: self.replicas > 0"]),
        case("no such overload", spec_schema(json!({"v": {"x-kubernetes-int-or-string": true}}),
                json!([{"rule": "self.v > 1"}])),
            json!({"spec": {"v": "50%"}}),
            vec!["spec: Invalid value: \"object\": 'no such overload': call arguments did not match a supported operator, function or macro signature for rule: self.v > 1"]),
    ]);
}

#[test]
fn transition_rules() {
    let immutable = spec_schema(
        json!({"name": {"type": "string", "x-kubernetes-validations": [
        {"rule": "self == oldSelf", "message": "Value is immutable"}]}}),
        json!([]),
    );
    let listmap = spec_schema(
        json!({"ports": {"type": "array",
        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"},
            "port": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.port >= oldSelf.port",
                "message": "port may only grow"}]}}}),
        json!([]),
    );
    let atomic = spec_schema(
        json!({"ports": {"type": "array",
        "items": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= oldSelf"}]}}}),
        json!([]),
    );
    let optional = spec_schema(
        json!({"n": {"type": "integer", "x-kubernetes-validations": [
        {"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": true,
         "message": "n may only grow"},
        {"rule": "oldSelf.hasValue() || self < 10", "optionalOldSelf": true,
         "message": "n starts below 10"}]}}),
        json!([]),
    );
    run(vec![
        case(
            "create skips oldSelf rules",
            immutable.clone(),
            json!({"spec": {"name": "a"}}),
            vec![],
        ),
        update(
            "unchanged",
            immutable.clone(),
            json!({"spec": {"name": "a"}}),
            json!({"spec": {"name": "a"}}),
            vec![],
        ),
        update(
            "changed",
            immutable.clone(),
            json!({"spec": {"name": "b"}}),
            json!({"spec": {"name": "a"}}),
            vec!["spec.name: Invalid value: \"string\": Value is immutable"],
        ),
        update(
            "newly set: no old value",
            immutable,
            json!({"spec": {"name": "b"}}),
            json!({"spec": {}}),
            vec![],
        ),
        update(
            "list-map items correlate by key",
            listmap.clone(),
            json!({"spec": {"ports": [{"name": "b", "port": 1}, {"name": "a", "port": 80}]}}),
            json!({"spec": {"ports": [{"name": "a", "port": 80}, {"name": "b", "port": 2}]}}),
            vec!["spec.ports[0]: Invalid value: \"object\": port may only grow"],
        ),
        update(
            "new list-map item has no old value",
            listmap,
            json!({"spec": {"ports": [{"name": "c", "port": 1}]}}),
            json!({"spec": {"ports": [{"name": "a", "port": 80}]}}),
            vec![],
        ),
        update(
            "atomic list items don't correlate",
            atomic,
            json!({"spec": {"ports": [1]}}),
            json!({"spec": {"ports": [5]}}),
            vec![],
        ),
        case(
            "optionalOldSelf on create",
            optional.clone(),
            json!({"spec": {"n": 12}}),
            vec!["spec.n: Invalid value: \"integer\": n starts below 10"],
        ),
        update(
            "optionalOldSelf on update",
            optional,
            json!({"spec": {"n": 12}}),
            json!({"spec": {"n": 15}}),
            vec!["spec.n: Invalid value: \"integer\": n may only grow"],
        ),
    ]);
}

#[test]
fn elements_and_types() {
    run(vec![
        case("list items, one by one", spec_schema(json!({"names": {"type": "array",
                "items": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "self.startsWith('a')"}]}}}), json!([])),
            json!({"spec": {"names": ["ab", "b", "ac", "c"]}}),
            vec!["spec.names[1]: Invalid value: \"string\": failed rule: self.startsWith('a')",
                 "spec.names[3]: Invalid value: \"string\": failed rule: self.startsWith('a')"]),
        case("map values, by key", spec_schema(json!({"limits": {"type": "object",
                "additionalProperties": {"type": "integer", "x-kubernetes-validations": [
                    {"rule": "self >= 0", "message": "must not be negative"}]}}}), json!([])),
            json!({"spec": {"limits": {"cpu": -1, "memory": 2}}}),
            vec!["spec.limits[cpu]: Invalid value: \"integer\": must not be negative"]),
        case("timestamps and durations", spec_schema(json!({
                "start": {"type": "string", "format": "date-time"},
                "end": {"type": "string", "format": "date-time"},
                "timeout": {"type": "string", "format": "duration"}}), json!([
                {"rule": "self.start < self.end", "message": "start before end"},
                {"rule": "self.timeout <= duration('1h')", "message": "at most an hour"},
                {"rule": "self.end - self.start >= self.timeout"}])),
            json!({"spec": {"start": "2024-01-02T00:00:00Z", "end": "2024-01-01T00:00:00Z",
                            "timeout": "1h30m"}}),
            vec!["spec: Invalid value: \"object\": start before end",
                 "spec: Invalid value: \"object\": at most an hour",
                 "spec: Invalid value: \"object\": failed rule: self.end - self.start >= self.timeout"]),
        case("int-or-string", spec_schema(json!({"max": {"x-kubernetes-int-or-string": true,
                "x-kubernetes-validations": [{"rule":
                    "type(self) == int ? self >= 0 : self.endsWith('%')"}]}}), json!([])),
            json!({"spec": {"max": "50"}}),
            vec!["spec.max: Invalid value: \"\": failed rule: type(self) == int ? self >= 0 : self.endsWith('%')"]),
        case("escaped property names and has()", spec_schema(json!({
                "foo-bar": {"type": "string"}, "namespace": {"type": "string"}}), json!([
                {"rule": "self.foo__dash__bar == self.__namespace__"},
                {"rule": "has(self.foo__dash__bar)"}])),
            json!({"spec": {"foo-bar": "a", "namespace": "a"}}), vec![]),
        case("numbers are doubles", spec_schema(json!({"r": {"type": "number"}}),
                json!([{"rule": "self.r == 1.0 && self.r > 0.5"}])),
            json!({"spec": {"r": 1}}), vec![]),
        case("preserve-unknown-fields are dynamic", spec_schema(json!({"any": {"type": "object",
                "x-kubernetes-preserve-unknown-fields": true}}),
                json!([{"rule": "self.any.x.y == 2 && self.any.z[0] == 'q'"}])),
            json!({"spec": {"any": {"x": {"y": 2}, "z": ["q"]}}}), vec![]),
    ]);
}

#[test]
fn kubernetes_libraries() {
    let s = |rule: &'static str| {
        spec_schema(
            json!({
        "s": {"type": "string"}, "l": {"type": "array", "items": {"type": "integer"}}}),
            json!([{"rule": rule}]),
        )
    };
    let obj = json!({"spec": {"s": "Hello, World", "l": [1, 2, 3]}});
    let rules = [
        "self.s.lowerAscii() == 'hello, world' && self.s.upperAscii() == 'HELLO, WORLD'",
        "self.s.split(', ') == ['Hello', 'World'] && ['a', 'b'].join('-') == 'a-b'",
        "self.s.replace('l', 'L') == 'HeLLo, WorLd' && ' x '.trim() == 'x'",
        "self.s.indexOf('o') == 4 && self.s.substring(7) == 'World' && self.s.charAt(0) == 'H'",
        "self.s.matches('^H.*d$') && self.s.contains('lo') && self.s.endsWith('ld')",
        "self.s.find('[A-Z][a-z]+') == 'Hello' && self.s.findAll('[A-Z]') == ['H', 'W']",
        "self.l.isSorted() && self.l.sum() == 6 && self.l.min() == 1 && self.l.max() == 3",
        "self.l.indexOf(2) == 1 && [1, 2, 1].lastIndexOf(1) == 2 && size(self.l) == 3",
        "self.l.all(x, x > 0) && self.l.exists(x, x == 2) && self.l.exists_one(x, x == 3)",
        "self.l.map(x, x * 2) == [2, 4, 6] && self.l.filter(x, x % 2 == 1) == [1, 3]",
        "isURL('https://example.com/a') && !isURL('not a url')",
    ];
    for rule in rules {
        assert_eq!(
            render(validate(&s(rule), &obj, None)),
            Vec::<String>::new(),
            "{rule}"
        );
    }
    assert_eq!(
        render(validate(&s("[].min() == 0"), &obj, None)),
        vec!["spec: Invalid value: \"object\": min(list) argument must not be empty evaluating rule: [].min() == 0"]
    );
}

#[test]
fn ratcheting_keeps_unchanged_invalid_values() {
    let schema = spec_schema(
        json!({"name": {"type": "string", "x-kubernetes-validations": [
        {"rule": "self.size() < 3"}]}, "other": {"type": "string"}}),
        json!([]),
    );
    let old = json!({"spec": {"name": "toolong", "other": "a"}});
    let new = json!({"spec": {"name": "toolong", "other": "b"}});
    assert!(validate(&schema, &new, Some(&old)).is_empty());
    let changed = json!({"spec": {"name": "stilltoolong"}});
    assert_eq!(
        render(validate(&schema, &changed, Some(&old))),
        vec!["spec.name: Invalid value: \"string\": failed rule: self.size() < 3"]
    );
}

#[test]
fn hostile_rules_are_bounded() {
    let schema = spec_schema(
        json!({"l": {"type": "array", "items": {"type": "integer"}}}),
        json!([
            {"rule": "self.l.all(a, self.l.all(b, self.l.all(c, a + b + c >= 0)))"},
            {"rule": "self.l.size() > 1000"}]),
    );
    let big: Vec<i64> = (0..300).collect();
    let started = std::time::Instant::now();
    let errs = render(validate(&schema, &json!({"spec": {"l": big}}), None));
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    assert_eq!(errs, vec!["spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.l.all(a, self.l.all(b, self.l.all(c, a + b + c >= 0)))"]);
    // The same rule on a small list is cheap, and runs.
    let errs = render(validate(&schema, &json!({"spec": {"l": [1, 2]}}), None));
    assert_eq!(
        errs,
        vec!["spec: Invalid value: \"object\": failed rule: self.l.size() > 1000"]
    );
    // Many cheap evaluations share one budget per object.
    let per_item = json!({"type": "object", "properties": {"l": {"type": "array", "items": {
        "type": "string", "x-kubernetes-validations": [{"rule":
            "self.split('').all(a, self.split('').all(b, a != b || a == b))"}]}}}});
    let long = "x".repeat(100);
    let many: Vec<&str> = (0..200).map(|_| long.as_str()).collect();
    let errs = render(validate(&per_item, &json!({"l": many}), None));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].ends_with(": validation failed due to running out of cost budget, no further validation rules will be run"), "{errs:?}");
}

#[test]
fn crd_compile_errors() {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "a": {"type": "integer"},
            "l": {"type": "array", "items": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}},
        "x-kubernetes-validations": [
            {"rule": "self.a >"},
            {"rule": "self.a > 0", "messageExpression": "'bad ' +"},
            {"rule": "self.a > 0", "optionalOldSelf": true},
            {"rule": "self.a > 0", "fieldPath": ".b"},
            {"rule": "self.a > 0", "fieldPath": ".a"}]}}});
    let errs = render(compile_errors(
        &schema,
        "spec.versions[0].schema.openAPIV3Schema",
    ));
    let at = "spec.versions[0].schema.openAPIV3Schema.properties[spec]";
    assert_eq!(errs.len(), 5, "{errs:#?}");
    assert!(errs[0].starts_with(&format!(
        "{at}.x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"self.a >\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: compilation failed: ERROR: <input>:1:9: Syntax error: mismatched input '<EOF>' expecting"
    )) && errs[0].ends_with("\n | self.a >\n | ........^"), "{}", errs[0]);
    assert!(errs[1].starts_with(&format!(
        "{at}.x-kubernetes-validations[1].messageExpression: Invalid value: apiextensions.ValidationRule{{"
    )) && errs[1].contains(": messageExpression compilation failed: ERROR: <input>:1:"), "{}", errs[1]);
    assert_eq!(errs[2], format!("{at}.x-kubernetes-validations[2].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"));
    assert_eq!(errs[3], format!("{at}.x-kubernetes-validations[3].fieldPath: Invalid value: \".b\": fieldPath must be a valid path"));
    assert_eq!(errs[4], format!("{at}.properties[l].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within {at}.properties[l]"));
}
