//! ValidatingAdmissionPolicy as the upstream docs' "Validating Admission Policy" page walks
//! through it with real kubectl: the first policy and its binding deny a Deployment with too many
//! replicas in a namespace labelled `environment: test`, with upstream's message; the params
//! example takes its limit from a ReplicaLimit custom resource; a Warn binding only warns; and a
//! policy whose expression fails follows its failurePolicy, never breaking the server.

use std::time::Duration;

use tinykube_tests::{eventually, table_rows, ApiServer};

// The docs' basic-example-policy.yaml and basic-example-binding.yaml, verbatim.
const POLICY: &str = r#"---
{
  apiVersion: "admissionregistration.k8s.io/v1",
  kind: "ValidatingAdmissionPolicy",
  metadata: {
    name: "demo-policy.example.com",
  },
  spec: {
    failurePolicy: "Fail",
    matchConstraints: {
      resourceRules: [{
        apiGroups: [
          "apps",
        ],
        apiVersions: [
          "v1",
        ],
        operations: [
          "CREATE",
          "UPDATE",
        ],
        resources: [
          "deployments",
        ],
      }],
    },
    validations: [{
      expression: "object.spec.replicas <= 5",
    }],
  },
}
"#;

const BINDING: &str = r#"---
{
  apiVersion: "admissionregistration.k8s.io/v1",
  kind: "ValidatingAdmissionPolicyBinding",
  metadata: {
    name: "demo-binding-test.example.com",
  },
  spec: {
    policyName: "demo-policy.example.com",
    validationActions: [
      "Deny",
    ],
    matchResources: {
      namespaceSelector: {
        matchLabels: {
          environment: "test",
        },
      },
    },
  },
}
"#;

const DENIED: &str = "ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed expression: object.spec.replicas <= 5";

fn apply(server: &ApiServer, manifest: &str) {
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(manifest))
        .ok();
}

fn test_namespace(server: &ApiServer) {
    server.kubectl(&["create", "namespace", "test"]).ok();
    server
        .kubectl(&["label", "namespace", "test", "environment=test"])
        .ok();
}

fn deployment(name: &str, ns: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n      - name: nginx\n        image: nginx\n"
    )
}

#[test]
fn the_docs_first_policy_denies_too_many_replicas_in_test_namespaces() {
    let server = ApiServer::start().unwrap();
    apply(&server, POLICY);
    apply(&server, BINDING);
    test_namespace(&server);

    let refused = server.kubectl(&[
        "create",
        "deployment",
        "nginx",
        "--image=nginx",
        "--replicas=6",
        "-n",
        "test",
    ]);
    let stderr = refused.fails();
    assert_eq!(
        stderr.trim(),
        format!(
            "error: failed to create deployment: deployments.apps \"nginx\" is forbidden: {DENIED}"
        )
    );
    // The Status is upstream's: reason Invalid, 422, the message as the one cause.
    let status: serde_json::Value = server
        .http()
        .post(format!(
            "{}/apis/apps/v1/namespaces/test/deployments",
            server.url
        ))
        .header("Content-Type", "application/yaml")
        .body(deployment("web", "test", 6))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(status["code"], 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["causes"][0]["message"], DENIED);
    assert_eq!(status["details"]["kind"], "deployments");

    // Within the limit, or outside the bound namespaces, creates go through.
    server
        .kubectl(&[
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--replicas=5",
            "-n",
            "test",
        ])
        .ok();
    server
        .kubectl(&[
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--replicas=6",
        ])
        .ok();
    // Updates are matched too; the scale subresource is not named by the rule, as upstream.
    let update = server.kubectl_stdin(&["apply", "-f", "-"], Some(&deployment("nginx", "test", 7)));
    assert!(update.fails().contains(DENIED), "{}", update.stderr);
    server
        .kubectl(&["scale", "deployment", "nginx", "--replicas=7", "-n", "test"])
        .ok();

    // Tables with upstream's columns, and the status the type checker writes.
    let vap = server
        .kubectl(&["get", "validatingadmissionpolicies"])
        .ok()
        .to_string();
    let rows = table_rows(&vap);
    assert_eq!(rows[0], ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]);
    assert_eq!(rows[1][..3], ["demo-policy.example.com", "1", "<unset>"]);
    let bindings = server
        .kubectl(&["get", "validatingadmissionpolicybindings"])
        .ok()
        .to_string();
    let rows = table_rows(&bindings);
    assert_eq!(rows[0], ["NAME", "POLICYNAME", "PARAMREF", "AGE"]);
    assert_eq!(
        rows[1][..3],
        [
            "demo-binding-test.example.com",
            "demo-policy.example.com",
            "<unset>"
        ]
    );
    assert!(eventually(Duration::from_secs(10), || {
        server
            .kubectl(&[
                "get",
                "validatingadmissionpolicy",
                "demo-policy.example.com",
                "-o",
                "jsonpath={.status.observedGeneration}",
            ])
            .stdout
            == "1"
    }));

    // Deleting the binding lifts the policy from the next request on.
    server
        .kubectl(&[
            "delete",
            "validatingadmissionpolicybinding",
            "demo-binding-test.example.com",
        ])
        .ok();
    server
        .kubectl(&[
            "create",
            "deployment",
            "big",
            "--image=nginx",
            "--replicas=9",
            "-n",
            "test",
        ])
        .ok();
}

const REPLICA_LIMIT_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: replicalimits.rules.example.com
spec:
  group: rules.example.com
  scope: Namespaced
  names: {plural: replicalimits, singular: replicalimit, kind: ReplicaLimit}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          maxReplicas: {type: integer}
"#;

// The docs' policy-with-param.yaml and binding-with-param.yaml, verbatim.
const PARAM_POLICY: &str = r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: "replicalimit-policy.example.com"
spec:
  failurePolicy: Fail
  paramKind:
    apiVersion: rules.example.com/v1
    kind: ReplicaLimit
  matchConstraints:
    resourceRules:
    - apiGroups:   ["apps"]
      apiVersions: ["v1"]
      operations:  ["CREATE", "UPDATE"]
      resources:   ["deployments"]
  validations:
    - expression: "object.spec.replicas <= params.maxReplicas"
      reason: Invalid"#;

const PARAM_BINDING: &str = r#"---
{
  apiVersion: "admissionregistration.k8s.io/v1",
  kind: "ValidatingAdmissionPolicyBinding",
  metadata: {
    name: "replicalimit-binding-test.example.com",
  },
  spec: {
    policyName: "replicalimit-policy.example.com",
    validationActions: [
      "Deny",
    ],
    paramRef: {
      name: "replica-limit-test.example.com",
      namespace: "default",
      parameterNotFoundAction: "Deny",
    },
    matchResources: {
      namespaceSelector: {
        matchLabels: {
          environment: "test",
        },
      },
    },
  },
}
"#;

// The docs' binding-with-param-prod.yaml, verbatim: it has no parameterNotFoundAction, which
// upstream requires.
const PROD_BINDING: &str = r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: "replicalimit-binding-nontest"
spec:
  policyName: "replicalimit-policy.example.com"
  validationActions: [Deny]
  paramRef:
    name: "replica-limit-prod.example.com"
    namespace: "default"
  matchResources:
    namespaceSelector:
      matchExpressions:
      - key: environment
        operator: NotIn
        values:
        - test"#;

// The docs' replicalimit-param.yaml with its `namesapce` typo corrected (strict field
// validation refuses the typo, upstream as here).
const PARAM: &str = r#"apiVersion: rules.example.com/v1
kind: ReplicaLimit
metadata:
  name: "replica-limit-test.example.com"
  namespace: "default"
maxReplicas: 3"#;

#[test]
fn the_docs_params_example_limits_replicas_from_a_custom_resource() {
    let server = ApiServer::start().unwrap();
    apply(&server, REPLICA_LIMIT_CRD);
    server
        .kubectl(&[
            "wait",
            "--for",
            "condition=established",
            "crd/replicalimits.rules.example.com",
        ])
        .ok();
    apply(&server, PARAM_POLICY);
    apply(&server, PARAM_BINDING);
    test_namespace(&server);

    // No param yet, and the binding says Deny when none is found.
    let missing = server.kubectl_stdin(&["apply", "-f", "-"], Some(&deployment("web", "test", 1)));
    assert!(
        missing.fails().contains("ValidatingAdmissionPolicy 'replicalimit-policy.example.com' with binding 'replicalimit-binding-test.example.com' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"),
        "{}",
        missing.stderr
    );

    apply(&server, PARAM);
    let refused = server.kubectl_stdin(&["apply", "-f", "-"], Some(&deployment("web", "test", 4)));
    assert!(
        refused.fails().contains("ValidatingAdmissionPolicy 'replicalimit-policy.example.com' with binding 'replicalimit-binding-test.example.com' denied request: failed expression: object.spec.replicas <= params.maxReplicas"),
        "{}",
        refused.stderr
    );
    apply(&server, &deployment("web", "test", 3));
    let rows = table_rows(
        server
            .kubectl(&["get", "validatingadmissionpolicybindings"])
            .ok(),
    );
    assert_eq!(rows[1][2], "default/replica-limit-test.example.com");

    // Upstream refuses the docs' production binding: it has no parameterNotFoundAction.
    let prod = server.kubectl_stdin(&["apply", "-f", "-"], Some(PROD_BINDING));
    assert!(
        prod.fails()
            .contains("spec.paramRef.parameterNotFoundAction: Required value"),
        "{}",
        prod.stderr
    );

    // The message expression of the docs' deployment-replicas-policy example.
    let with_message = PARAM_POLICY.replace(
        "      reason: Invalid",
        "      messageExpression: \"'object.spec.replicas must be no greater than ' + string(params.maxReplicas)\"\n      reason: Invalid",
    );
    apply(&server, &with_message);
    let refused = server.kubectl(&[
        "create",
        "deploy",
        "--image=nginx",
        "nginx",
        "--replicas=5",
        "-n",
        "test",
    ]);
    assert!(
        refused
            .fails()
            .contains("denied request: object.spec.replicas must be no greater than 3"),
        "{}",
        refused.stderr
    );
}

#[test]
fn a_warn_binding_warns_and_admits() {
    let server = ApiServer::start().unwrap();
    apply(&server, POLICY);
    apply(
        &server,
        &BINDING
            .replace("demo-binding-test.example.com", "demo-binding-warn")
            .replace("\"Deny\"", "\"Warn\""),
    );
    test_namespace(&server);
    let created = server.kubectl(&[
        "create",
        "deployment",
        "nginx",
        "--image=nginx",
        "--replicas=6",
        "-n",
        "test",
    ]);
    created.ok();
    assert!(
        created.stderr.contains("Warning: Validation failed for ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-warn': failed expression: object.spec.replicas <= 5"),
        "{}",
        created.stderr
    );
    // Deny and Warn together are refused, as upstream.
    let both = server.kubectl_stdin(
        &["apply", "-f", "-"],
        Some(&BINDING.replace("\"Deny\",", "\"Deny\", \"Warn\",")),
    );
    assert!(
        both.fails().contains("must not contain both Deny and Warn"),
        "{}",
        both.stderr
    );
}

#[test]
fn failing_expressions_follow_the_failure_policy() {
    let server = ApiServer::start().unwrap();
    // A policy that does not compile is refused with cel-go's words.
    let broken = POLICY.replace("object.spec.replicas <= 5", "object.spec.replicas <=");
    let refused = server.kubectl_stdin(&["apply", "-f", "-"], Some(&broken));
    assert!(
        refused.fails().contains("spec.validations[0].expression: Invalid value: \"object.spec.replicas <=\": compilation failed: ERROR: <input>:1:"),
        "{}",
        refused.stderr
    );
    // One that fails at run time: Fail denies with the error, Ignore admits.
    let failing = POLICY.replace("object.spec.replicas <= 5", "object.spec.nope <= 5");
    apply(&server, &failing);
    apply(&server, BINDING);
    test_namespace(&server);
    let denied = server.kubectl(&["create", "deployment", "a", "--image=nginx", "-n", "test"]);
    assert!(
        denied.fails().contains("denied request: expression 'object.spec.nope <= 5' resulted in error: no such key: nope"),
        "{}",
        denied.stderr
    );
    apply(&server, &failing.replace("\"Fail\"", "\"Ignore\""));
    server
        .kubectl(&["create", "deployment", "a", "--image=nginx", "-n", "test"])
        .ok();
    // Deletes are admitted too when the rules name them (kubectl prints the 422 as it prints
    // any Invalid Status; the name is upstream's "Unknown": a delete has no new object).
    let on_delete = failing
        .replace("\"UPDATE\",", "\"UPDATE\", \"DELETE\",")
        .replace(
            "object.spec.nope <= 5",
            "request.operation != 'DELETE' || oldObject.metadata.name != 'a'",
        );
    apply(&server, &on_delete);
    let kept = server.kubectl(&["delete", "deployment", "a", "-n", "test"]);
    assert!(
        kept.fails().contains("The deployments \"Unknown\" is invalid: : ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed expression: request.operation != 'DELETE' || oldObject.metadata.name != 'a'"),
        "{}",
        kept.stderr
    );
    server
        .kubectl(&["get", "deployment", "a", "-n", "test"])
        .ok();
}
