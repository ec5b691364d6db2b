//! Schema rules: OpenAPI keywords v1 forbids, list and map types, and structural schemas, at
//! the paths upstream reports (`spec.validation.openAPIV3Schema…` when every version shares
//! the schema, `spec.versions[i].schema.openAPIV3Schema…` otherwise).

use serde_json::{json, Value};

use super::tests::{create_errors, crontab_with};

const ROOT: &str = "spec.validation.openAPIV3Schema";

/// The CronTab CRD without subresources and with `schema` as its only version's schema.
fn with_schema(schema: Value) -> Vec<String> {
    create_errors(crontab_with(|c| {
        let v = &mut c["spec"]["versions"][0];
        v.as_object_mut().unwrap().remove("subresources");
        v.as_object_mut()
            .unwrap()
            .remove("additionalPrinterColumns");
        v["schema"] = json!({ "openAPIV3Schema": schema });
    }))
}

/// An object schema with one property `p`.
fn prop(p: Value) -> Value {
    json!({"type": "object", "properties": {"p": p}})
}

#[test]
fn structural_schemas_as_upstream() {
    let cases: Vec<(Value, Vec<String>)> = vec![
        (
            json!({"properties": {"spec": {"properties": {"x": {"type": "string"}}}}}),
            vec![
                format!("{ROOT}.properties[spec].type: Required value: must not be empty for specified object fields"),
                format!("{ROOT}.type: Required value: must not be empty at the root"),
            ],
        ),
        (
            json!({"type": "array", "items": {"type": "string"}}),
            vec![format!("{ROOT}.type: Invalid value: \"array\": must be object at the root")],
        ),
        (
            prop(json!({"type": "array"})),
            vec![format!("{ROOT}.properties[p].items: Required value: must be specified")],
        ),
        (
            prop(json!({"type": "array", "items": {"description": "untyped"}})),
            vec![format!("{ROOT}.properties[p].items.type: Required value: must not be empty for specified array items")],
        ),
        (prop(json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]})), vec![]),
        (prop(json!({"x-kubernetes-preserve-unknown-fields": true})), vec![]),
        (
            prop(json!({"type": "object", "anyOf": [{"type": "object", "description": "d", "nullable": true, "properties": {"q": {"default": 1}}}]})),
            vec![
                format!("{ROOT}.properties[p].anyOf[0].description: Forbidden: must be empty to be structural"),
                format!("{ROOT}.properties[p].anyOf[0].nullable: Forbidden: must be false to be structural"),
                format!("{ROOT}.properties[p].anyOf[0].properties[q].default: Forbidden: must be undefined to be structural"),
                format!("{ROOT}.properties[p].anyOf[0].type: Forbidden: must be empty to be structural"),
            ],
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "anyOf": [{"required": ["b"]}, {"properties": {"b": {"minLength": 1}}}]}),
            vec![format!("{ROOT}.properties[b]: Required value: because it is defined in {ROOT}.anyOf[1].properties[b]")],
        ),
        (
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}}}),
            vec![],
        ),
        (
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}),
            vec![format!("{ROOT}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified")],
        ),
        (
            json!({"type": "object", "properties": {"kind": {"type": "integer"}, "metadata": {"type": "string"}}}),
            vec![
                format!("{ROOT}.properties[kind].type: Invalid value: \"integer\": must be string"),
                format!("{ROOT}.properties[metadata].type: Invalid value: \"string\": must be object"),
            ],
        ),
        (
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            vec![format!("{ROOT}.additionalProperties: Forbidden: must not be used at the root")],
        ),
        (
            prop(json!({"type": "object", "x-kubernetes-embedded-resource": true})),
            vec![format!("{ROOT}.properties[p].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields")],
        ),
        (
            prop(json!({"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true})),
            vec![format!("{ROOT}.properties[p].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true")],
        ),
    ];
    for (i, (schema, want)) in cases.into_iter().enumerate() {
        assert_eq!(with_schema(schema.clone()), want, "case {i}: {schema}");
    }
}

#[test]
fn keywords_v1_forbids_as_upstream() {
    let cases: Vec<(Value, Vec<String>)> = vec![
        (
            prop(json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true})),
            vec![format!("{ROOT}.properties[p].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic")],
        ),
        (
            prop(json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}})),
            vec![format!("{ROOT}.properties[p].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive")],
        ),
        (
            prop(json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false})),
            vec![format!("{ROOT}.properties[p].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive")],
        ),
        (
            prop(json!({"type": "string", "$ref": "#/definitions/x", "id": "x"})),
            vec![
                format!("{ROOT}.properties[p].id: Forbidden: id is not supported"),
                format!("{ROOT}.properties[p].$ref: Forbidden: $ref is not supported"),
            ],
        ),
        (
            prop(json!({"type": "object", "definitions": {"x": {"type": "string"}}, "patternProperties": {"^a": {"type": "string"}}, "dependencies": {"a": ["b"]}})),
            vec![
                format!("{ROOT}.properties[p].patternProperties: Forbidden: patternProperties is not supported"),
                format!("{ROOT}.properties[p].definitions: Forbidden: definitions is not supported"),
                format!("{ROOT}.properties[p].dependencies: Forbidden: dependencies is not supported"),
            ],
        ),
        (
            prop(json!({"type": "array", "items": [{"type": "string"}], "additionalItems": false})),
            vec![
                format!("{ROOT}.properties[p].additionalItems: Forbidden: additionalItems is not supported"),
                format!("{ROOT}.properties[p].items: Forbidden: items must be a schema object and not an array"),
            ],
        ),
        (
            prop(json!({"type": "null"})),
            vec![
                format!("{ROOT}.properties[p].type: Unsupported value: \"null\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""),
                format!("{ROOT}.properties[p].type: Forbidden: type cannot be set to null, use nullable as an alternative"),
            ],
        ),
        (
            prop(json!({"type": "string", "x-kubernetes-preserve-unknown-fields": false})),
            vec![format!("{ROOT}.properties[p].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined")],
        ),
        (
            json!({"type": "object", "nullable": true}),
            vec![format!("{ROOT}.nullable: Forbidden: nullable cannot be true at the root")],
        ),
        (
            json!({"type": "object", "properties": {"metadata": {"type": "object", "default": {"name": "x"}}}}),
            vec![format!("{ROOT}.properties[metadata].default: Forbidden: must not be set in top-level metadata")],
        ),
        (
            json!({"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"}),
            vec![format!("{ROOT}: Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported")],
        ),
    ];
    for (i, (schema, want)) in cases.into_iter().enumerate() {
        assert_eq!(with_schema(schema.clone()), want, "case {i}: {schema}");
    }
}

#[test]
fn list_and_map_types_as_upstream() {
    let cases: Vec<(Value, Vec<String>)> = vec![
        (
            prop(json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}})),
            vec![],
        ),
        (
            prop(json!({"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "string"}})),
            vec![
                format!("{ROOT}.properties[p].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"),
                format!("{ROOT}.properties[p].items.type: Invalid value: \"string\": must be object if parent array's x-kubernetes-list-type is map"),
            ],
        ),
        (
            prop(json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port", "name"],
                "items": {"type": "object", "properties": {"name": {"type": "object"}, "x": {"type": "string"}}}})),
            vec![
                format!("{ROOT}.properties[p].items.properties[name].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map"),
                format!("{ROOT}.properties[p].x-kubernetes-list-map-keys: Invalid value: [\"name\",\"port\",\"name\"]: entries must all be names of item properties"),
                format!("{ROOT}.properties[p].items.properties[name].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map"),
                format!("{ROOT}.properties[p].x-kubernetes-list-map-keys: Invalid value: [\"name\",\"port\",\"name\"]: must not contain duplicate entries"),
                format!("{ROOT}.properties[p].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"),
                format!("{ROOT}.properties[p].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"),
            ],
        ),
        (
            prop(json!({"type": "string", "x-kubernetes-list-type": "list", "x-kubernetes-map-type": "deep"})),
            vec![
                format!("{ROOT}.properties[p].type: Invalid value: \"string\": must be object if x-kubernetes-map-type is specified"),
                format!("{ROOT}.properties[p].x-kubernetes-map-type: Unsupported value: \"deep\": supported values: \"atomic\", \"granular\""),
                format!("{ROOT}.properties[p].type: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified"),
                format!("{ROOT}.properties[p].x-kubernetes-list-type: Unsupported value: \"list\": supported values: \"atomic\", \"set\", \"map\""),
            ],
        ),
        (
            prop(json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object", "nullable": true}})),
            vec![
                format!("{ROOT}.properties[p].items.x-kubernetes-map-type: Invalid value: \"null\": must be atomic as item of a list with x-kubernetes-list-type=set"),
                format!("{ROOT}.properties[p].items.nullable: Forbidden: cannot be nullable when x-kubernetes-list-type is set"),
            ],
        ),
        (
            prop(json!({"type": "array", "x-kubernetes-list-map-keys": ["a"], "items": {"type": "string"}})),
            vec![format!("{ROOT}.properties[p].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty")],
        ),
    ];
    for (i, (schema, want)) in cases.into_iter().enumerate() {
        assert_eq!(with_schema(schema.clone()), want, "case {i}: {schema}");
    }
}

#[test]
fn the_status_subresource_limits_the_root() {
    let errs = create_errors(crontab_with(|c| {
        let s = &mut c["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        s["anyOf"] = json!([{"required": ["spec"]}]);
    }));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with(&format!("{ROOT}: Invalid value: {{")),
        "{errs:?}"
    );
    assert!(errs[0].ends_with(": only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled"));
    let errs = create_errors(crontab_with(|c| {
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["type"] = json!("array");
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["items"] = json!({"type": "string"});
    }));
    assert_eq!(
        errs[0],
        format!("{ROOT}.type: Invalid value: \"array\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled")
    );
}

#[test]
fn differing_version_schemas_keep_their_version_paths() {
    let errs = create_errors(crontab_with(|c| {
        let mut v2 = c["spec"]["versions"][0].clone();
        v2["name"] = json!("v2");
        v2["storage"] = json!(false);
        v2["schema"]["openAPIV3Schema"]["properties"]["spec"] = json!({"properties": {}});
        c["spec"]["versions"].as_array_mut().unwrap().push(v2);
    }));
    assert_eq!(
        errs,
        ["spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"]
    );
}

#[test]
fn validation_rules_have_a_rule_and_a_one_line_message() {
    let errs = with_schema(json!({"type": "object", "x-kubernetes-validations": [
        {"rule": " "}, {"rule": "self.a > 0", "message": "  "}, {"rule": "self.a\n > 0"}
    ], "properties": {"a": {"type": "integer"}}}));
    assert_eq!(
        errs,
        [
            format!("{ROOT}.x-kubernetes-validations[0].rule: Required value: rule is not specified"),
            format!("{ROOT}.x-kubernetes-validations[1].message: Invalid value: \"  \": message must be non-empty if specified"),
            format!("{ROOT}.x-kubernetes-validations[2].message: Required value: message must be specified if rule contains line breaks"),
        ]
    );
}
