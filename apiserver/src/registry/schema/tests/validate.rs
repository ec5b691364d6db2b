//! Validation messages, as upstream renders them (`field: message`), one table per concern.

use serde_json::{json, Value};

use crate::registry::field::ErrorType;
use crate::registry::schema::validate;

/// A root schema whose `spec` has the single property `field` with schema `prop`.
pub(super) fn spec_with(prop: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"field": prop}}
        }
    })
}

pub(super) fn messages(schema: &Value, obj: &Value) -> Vec<String> {
    validate(schema, obj)
        .iter()
        .map(|e| e.to_string())
        .collect()
}

/// Each case: the property's schema, its value, the messages expected.
fn check_field(cases: &[(Value, Value, &[&str])]) {
    for (prop, value, want) in cases {
        let schema = spec_with(prop.clone());
        let obj = json!({"apiVersion": "a/v1", "kind": "K", "spec": {"field": value}});
        assert_eq!(
            messages(&schema, &obj),
            *want,
            "schema {prop} value {value}"
        );
    }
}

#[test]
fn types() {
    check_field(&[
        (
            json!({"type": "integer"}),
            json!("string"),
            &[
                r#"spec.field: Invalid value: "string": spec.field in body must be of type integer: "string""#,
            ],
        ),
        (
            json!({"type": "integer"}),
            json!(1.5),
            &[
                r#"spec.field: Invalid value: "number": spec.field in body must be of type integer: "number""#,
            ],
        ),
        (json!({"type": "integer"}), json!(5.0), &[]),
        (json!({"type": "number"}), json!(5), &[]),
        (
            json!({"type": "string"}),
            json!(true),
            &[
                r#"spec.field: Invalid value: "boolean": spec.field in body must be of type string: "boolean""#,
            ],
        ),
        (
            json!({"type": "object"}),
            json!([1]),
            &[
                r#"spec.field: Invalid value: "array": spec.field in body must be of type object: "array""#,
            ],
        ),
        (
            json!({"type": "array"}),
            json!({"a": 1}),
            &[
                r#"spec.field: Invalid value: "object": spec.field in body must be of type array: "object""#,
            ],
        ),
        (
            json!({"type": "boolean"}),
            json!(null),
            &[
                r#"spec.field: Invalid value: "null": spec.field in body must be of type boolean: "null""#,
            ],
        ),
        (
            json!({"type": "boolean", "nullable": true}),
            json!(null),
            &[],
        ),
        (json!({"x-kubernetes-int-or-string": true}), json!(3), &[]),
        (
            json!({"x-kubernetes-int-or-string": true}),
            json!("50%"),
            &[],
        ),
        (
            json!({"x-kubernetes-int-or-string": true}),
            json!(true),
            &[
                r#"spec.field: Invalid value: "boolean": spec.field in body must be of type integer,string: "boolean""#,
            ],
        ),
        (
            json!({"x-kubernetes-int-or-string": true}),
            json!(1.5),
            &[
                r#"spec.field: Invalid value: "number": spec.field in body must be of type integer,string: "number""#,
            ],
        ),
        // No type: anything goes.
        (
            json!({"x-kubernetes-preserve-unknown-fields": true}),
            json!({"a": [1]}),
            &[],
        ),
    ]);
}

#[test]
fn type_errors_are_type_invalid() {
    let errs = validate(
        &spec_with(json!({"type": "integer"})),
        &json!({"spec": {"field": "x"}}),
    );
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].kind, ErrorType::TypeInvalid);
    assert_eq!(errs[0].kind.reason(), "FieldValueTypeInvalid");
    assert_eq!(
        errs[0].to_string(),
        "spec.field: Invalid value: \"string\": spec.field in body must be of type integer: \"string\""
    );
}

#[test]
fn numbers() {
    check_field(&[
        (
            json!({"type": "integer", "maximum": 10}),
            json!(15),
            &["spec.field: Invalid value: 15: spec.field in body should be less than or equal to 10"],
        ),
        (json!({"type": "integer", "maximum": 10}), json!(10), &[]),
        (
            json!({"type": "integer", "maximum": 10, "exclusiveMaximum": true}),
            json!(10),
            &["spec.field: Invalid value: 10: spec.field in body should be less than 10"],
        ),
        (
            json!({"type": "integer", "minimum": 1}),
            json!(0),
            &["spec.field: Invalid value: 0: spec.field in body should be greater than or equal to 1"],
        ),
        (
            json!({"type": "integer", "minimum": 1, "exclusiveMinimum": true}),
            json!(1),
            &["spec.field: Invalid value: 1: spec.field in body should be greater than 1"],
        ),
        (
            json!({"type": "number", "maximum": 1.5}),
            json!(2.25),
            &["spec.field: Invalid value: 2.25: spec.field in body should be less than or equal to 1.5"],
        ),
        // Go prints large floats in exponent form.
        (
            json!({"type": "number", "maximum": 1000000}),
            json!(2000000.5),
            &["spec.field: Invalid value: 2.0000005e+06: spec.field in body should be less than or equal to 1e+06"],
        ),
        // An integer meets bounds cut to integers, as kube-openapi compares them natively.
        (json!({"type": "integer", "minimum": 1.5}), json!(1), &[]),
        (
            json!({"type": "integer", "multipleOf": 5}),
            json!(12),
            &["spec.field: Invalid value: 12: spec.field in body should be a multiple of 5"],
        ),
        (json!({"type": "integer", "multipleOf": 5}), json!(15), &[]),
        (
            json!({"type": "number", "multipleOf": 0.5}),
            json!(1.25),
            &["spec.field: Invalid value: 1.25: spec.field in body should be a multiple of 0.5"],
        ),
        (json!({"type": "number", "multipleOf": 0.1}), json!(0.3), &[]),
        // multipleOf, minimum, maximum: in that order, all reported.
        (
            json!({"type": "integer", "multipleOf": 2, "maximum": 4}),
            json!(7),
            &[
                "spec.field: Invalid value: 7: spec.field in body should be a multiple of 2",
                "spec.field: Invalid value: 7: spec.field in body should be less than or equal to 4",
            ],
        ),
    ]);
}

#[test]
fn strings() {
    check_field(&[
        (
            json!({"type": "string", "maxLength": 3}),
            json!("abcd"),
            &["spec.field: Too long: may not be more than 3 bytes"],
        ),
        (
            json!({"type": "string", "maxLength": 1}),
            json!("ab"),
            &["spec.field: Too long: may not be more than 1 byte"],
        ),
        // Lengths count characters.
        (json!({"type": "string", "maxLength": 3}), json!("äöü"), &[]),
        (
            json!({"type": "string", "minLength": 3}),
            json!("ab"),
            &[
                r#"spec.field: Invalid value: "ab": spec.field in body should be at least 3 chars long"#,
            ],
        ),
        (
            json!({"type": "string", "pattern": "^[a-z]+$"}),
            json!("AB"),
            &[r#"spec.field: Invalid value: "AB": spec.field in body should match '^[a-z]+$'"#],
        ),
        // The first failing string check only.
        (
            json!({"type": "string", "maxLength": 1, "pattern": "^[a-z]+$"}),
            json!("AB"),
            &["spec.field: Too long: may not be more than 1 byte"],
        ),
        // A type error does not stop the other checks.
        (
            json!({"type": "integer", "enum": [1, 2]}),
            json!("x"),
            &[
                r#"spec.field: Invalid value: "string": spec.field in body must be of type integer: "string""#,
                r#"spec.field: Unsupported value: "x": supported values: "1", "2""#,
            ],
        ),
    ]);
}

#[test]
fn enums() {
    check_field(&[
        (
            json!({"type": "string", "enum": ["a", "b"]}),
            json!("c"),
            &[r#"spec.field: Unsupported value: "c": supported values: "a", "b""#],
        ),
        (
            json!({"type": "string", "enum": ["a", "b"]}),
            json!("b"),
            &[],
        ),
        (
            json!({"type": "integer", "enum": [1, 2]}),
            json!(3),
            &[r#"spec.field: Unsupported value: 3: supported values: "1", "2""#],
        ),
        (json!({"type": "integer", "enum": [1, 2]}), json!(2), &[]),
        (
            json!({"type": "object", "enum": [{"a": 1}]}),
            json!({"a": 2}),
            &[
                r#"spec.field: Unsupported value: map[string]interface {}{"a":2}: supported values: "{\"a\":1}""#,
            ],
        ),
        // Upstream never matches a null against an enum.
        (
            json!({"type": "string", "nullable": true, "enum": ["a"]}),
            json!(null),
            &[r#"spec.field: Unsupported value: "null": supported values: "a""#],
        ),
    ]);
}

#[test]
fn arrays() {
    check_field(&[
        (
            json!({"type": "array", "maxItems": 3, "items": {"type": "string"}}),
            json!(["a", "b", "c", "d"]),
            &["spec.field: Too many: 4: must have at most 3 items"],
        ),
        (
            json!({"type": "array", "maxItems": 1, "items": {"type": "string"}}),
            json!(["a", "b"]),
            &["spec.field: Too many: 2: must have at most 1 item"],
        ),
        (
            json!({"type": "array", "minItems": 2, "items": {"type": "string"}}),
            json!(["a"]),
            &["spec.field: Invalid value: 1: spec.field in body should have at least 2 items"],
        ),
        (
            json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}}),
            json!(["a", "a"]),
            &[r#"spec.field: Invalid value: "": spec.field in body shouldn't contain duplicates"#],
        ),
        // Items first, with their index.
        (
            json!({"type": "array", "maxItems": 1, "items": {"type": "object", "properties": {"bar": {"type": "integer"}}, "required": ["bar"]}}),
            json!([{"bar": "x"}, {}]),
            &[
                r#"spec.field[0].bar: Invalid value: "string": spec.field[0].bar in body must be of type integer: "string""#,
                "spec.field[1].bar: Required value",
                "spec.field: Too many: 2: must have at most 1 item",
            ],
        ),
    ]);
}

#[test]
fn objects() {
    check_field(&[
        (
            json!({"type": "object", "required": ["a", "b"], "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}),
            json!({"a": "x"}),
            &["spec.field.b: Required value"],
        ),
        (
            json!({"type": "object", "maxProperties": 2, "additionalProperties": {"type": "string"}}),
            json!({"a": "x", "b": "y", "c": 1}),
            // min/maxProperties end the object's checks: the bad value of c goes unreported.
            &["spec.field: Too many: 3: must have at most 2 items"],
        ),
        (
            json!({"type": "object", "minProperties": 2, "additionalProperties": {"type": "string"}}),
            json!({"a": "x"}),
            &["spec.field: Invalid value: 1: spec.field in body should have at least 2 properties"],
        ),
        (
            json!({"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}),
            json!({"a": 1, "b": -1}),
            &["spec.field.b: Invalid value: -1: spec.field.b in body should be greater than or equal to 0"],
        ),
        (
            json!({"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}}),
            json!({"a": "x", "b": 1}),
            &[r#"spec.field: Invalid value: "b": spec.field.b in body is a forbidden property"#],
        ),
    ]);
}

#[test]
fn required_at_the_root_and_composition() {
    let schema = json!({
        "type": "object",
        "required": ["spec"],
        "properties": {"spec": {"type": "object"}}
    });
    assert_eq!(
        messages(&schema, &json!({"apiVersion": "a/v1", "kind": "K"})),
        ["spec: Required value"]
    );
    check_field(&[
        (
            json!({"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}),
            json!({"c": 1}),
            &[
                r#"<nil>: Invalid value: "": "spec.field" must validate at least one schema (anyOf)"#,
                "spec.field.a: Required value",
            ],
        ),
        (
            json!({"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}),
            json!({"b": 1}),
            &[],
        ),
        (
            json!({"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}),
            json!({"a": 1, "b": 1}),
            &[r#"<nil>: Invalid value: "": "spec.field" must validate one and only one schema (oneOf). Found 2 valid alternatives"#],
        ),
        (
            json!({"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}),
            json!({}),
            &[
                r#"<nil>: Invalid value: "": "spec.field" must validate one and only one schema (oneOf). Found none valid"#,
                "spec.field.a: Required value",
            ],
        ),
        (
            json!({"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 3}]}),
            json!(5),
            &[
                "spec.field: Invalid value: 5: spec.field in body should be less than or equal to 3",
                r#"<nil>: Invalid value: "": "spec.field" must validate all the schemas (allOf)"#,
            ],
        ),
        (
            json!({"type": "string", "not": {"enum": ["x"]}}),
            json!("x"),
            &[r#"<nil>: Invalid value: "": "spec.field" must not validate the schema (not)"#],
        ),
    ]);
}

#[test]
fn formats() {
    let f = |format: &str| json!({"type": "string", "format": format});
    let bad = |format: &str, v: &str| {
        format!(
            r#"spec.field: Invalid value: "{v}": spec.field in body must be of type {format}: "{v}""#
        )
    };
    let good: &[(&str, &str)] = &[
        ("uuid", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"),
        ("date", "2024-02-29"),
        ("date-time", "2024-02-29T10:00:00Z"),
        ("date-time", "2024-02-29T10:00:00.123+02:00"),
        ("byte", "aGVsbG8="),
        ("email", "a.b@example.com"),
        ("hostname", "example.com"),
        ("ipv4", "10.0.0.1"),
        ("ipv6", "fe80::1"),
        ("cidr", "10.0.0.0/8"),
        ("mac", "00:00:5e:00:53:01"),
        ("uri", "https://example.com/x"),
        ("duration", "1h30m"),
        ("duration", "3 days"),
        ("hexcolor", "#fff"),
        ("isbn13", "978-0321751041"),
        ("password", "anything"),
        // Formats upstream does not check are ignored.
        ("int32", "not a number"),
        ("my-own-format", "whatever"),
    ];
    for (format, v) in good {
        assert_eq!(
            messages(&spec_with(f(format)), &json!({"spec": {"field": v}})),
            Vec::<String>::new(),
            "{format} {v}"
        );
    }
    let wrong: &[(&str, &str)] = &[
        ("uuid", "not-a-uuid"),
        ("date", "2023-02-29"),
        ("date", "2024-2-01"),
        ("date-time", "2024-02-29 10:00:00"),
        ("byte", "hello!"),
        ("email", "nobody"),
        ("ipv4", "10.0.0.256"),
        ("ipv4", "fe80::1"),
        ("ipv6", "10.0.0.1"),
        ("cidr", "10.0.0.0/33"),
        ("hostname", "-bad-.com"),
        ("uri", "relative/path"),
    ];
    for (format, v) in wrong {
        assert_eq!(
            messages(&spec_with(f(format)), &json!({"spec": {"field": v}})),
            [bad(format, v)],
            "{format} {v}"
        );
    }
    // A format on a non-string value: the value's Go format is what it is not.
    assert_eq!(
        messages(&spec_with(f("date")), &json!({"spec": {"field": 3}})),
        [r#"spec.field: Invalid value: "int64": spec.field in body must be of type date: "int64""#]
    );
}
