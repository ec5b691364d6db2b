//! CustomResourceDefinitions as the upstream docs' "Extend the Kubernetes API with
//! CustomResourceDefinitions" page walks through them with real kubectl: the CronTab CRD is
//! established and served, its objects are created, listed with their printer columns,
//! validated by the schema, scaled and deleted with the definition; the resource appears in
//! discovery and leaves it again.

use serde_json::Value;
use tinykube_tests::{table_rows, ApiServer};

const CRONTAB_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  # name must match the spec fields below, and be in the form: <plural>.<group>
  name: crontabs.stable.example.com
spec:
  # group name to use for REST API: /apis/<group>/<version>
  group: stable.example.com
  # list of versions supported by this CustomResourceDefinition
  versions:
    - name: v1
      # Each version can be enabled/disabled by Served flag.
      served: true
      # One and only one version must be marked as the storage version.
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                cronSpec:
                  type: string
                  pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
                image:
                  type: string
                replicas:
                  type: integer
                  minimum: 1
                  maximum: 10
            status:
              type: object
              properties:
                replicas:
                  type: integer
                labelSelector:
                  type: string
      subresources:
        status: {}
        scale:
          specReplicasPath: .spec.replicas
          statusReplicasPath: .status.replicas
          labelSelectorPath: .status.labelSelector
      additionalPrinterColumns:
      - name: Spec
        type: string
        description: The cron spec defining the interval a CronJob is run
        jsonPath: .spec.cronSpec
      - name: Replicas
        type: integer
        description: The number of jobs launched by the CronJob
        jsonPath: .spec.replicas
      - name: Age
        type: date
        jsonPath: .metadata.creationTimestamp
  # either Namespaced or Cluster
  scope: Namespaced
  names:
    # plural name to be used in the URL: /apis/<group>/<version>/<plural>
    plural: crontabs
    # singular name to be used as an alias on the CLI and for display
    singular: crontab
    # kind is normally the CamelCased singular type. Your resource manifests use this.
    kind: CronTab
    # shortNames allow shorter string to match your resource on the CLI
    shortNames:
    - ct
    categories:
    - all
"#;

const MY_CRONTAB: &str = r#"apiVersion: "stable.example.com/v1"
kind: CronTab
metadata:
  name: my-new-cron-object
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
  replicas: 1
"#;

fn install(server: &ApiServer) {
    let out = server.kubectl_stdin(&["apply", "-f", "-"], Some(CRONTAB_CRD));
    assert_eq!(
        out.ok(),
        "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created\n"
    );
    let waited = server.kubectl(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=20s",
        "crd/crontabs.stable.example.com",
    ]);
    assert_eq!(
        waited.ok(),
        "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com condition met\n"
    );
}

fn get_json(server: &ApiServer, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(server.kubectl(&all).ok()).expect("kubectl printed JSON")
}

#[test]
fn the_crontab_walk_through_works_with_kubectl() {
    let server = ApiServer::start().unwrap();
    install(&server);

    let crd = get_json(&server, &["get", "crd", "crontabs.stable.example.com"]);
    let conditions = crd["status"]["conditions"].as_array().unwrap();
    let status_of = |t: &str| {
        conditions
            .iter()
            .find(|c| c["type"] == t)
            .map(|c| (c["status"].clone(), c["reason"].clone()))
    };
    assert_eq!(
        status_of("NamesAccepted"),
        Some(("True".into(), "NoConflicts".into()))
    );
    assert_eq!(
        status_of("Established"),
        Some(("True".into(), "InitialNamesAccepted".into()))
    );
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "CronTab");
    assert_eq!(crd["status"]["storedVersions"], serde_json::json!(["v1"]));

    let created = server.kubectl_stdin(&["apply", "-f", "-"], Some(MY_CRONTAB));
    assert_eq!(
        created.ok(),
        "crontab.stable.example.com/my-new-cron-object created\n"
    );

    let rows = table_rows(server.kubectl(&["get", "crontab"]).ok());
    assert_eq!(rows[0], ["NAME", "SPEC", "REPLICAS", "AGE"]);
    assert_eq!(
        rows[1][..7],
        ["my-new-cron-object", "*", "*", "*", "*", "*/5", "1"]
    );

    let obj = get_json(&server, &["get", "ct", "my-new-cron-object"]);
    assert_eq!(obj["apiVersion"], "stable.example.com/v1");
    assert_eq!(obj["kind"], "CronTab");
    assert_eq!(obj["spec"]["image"], "my-awesome-cron-image");
    assert_eq!(obj["metadata"]["generation"], 1);

    // The resource is in discovery, with its short name and category.
    let resources = server.kubectl(&["api-resources", "--api-group=stable.example.com"]);
    let rows = table_rows(resources.ok());
    assert_eq!(
        rows[1],
        ["crontabs", "ct", "stable.example.com/v1", "true", "CronTab"]
    );
    let all = server.kubectl(&["get", "all"]);
    assert!(
        all.ok()
            .contains("crontab.stable.example.com/my-new-cron-object"),
        "{}",
        all.stdout
    );

    // Scale through the scale subresource.
    let scaled = server.kubectl(&["scale", "crontab/my-new-cron-object", "--replicas=3"]);
    assert_eq!(
        scaled.ok(),
        "crontab.stable.example.com/my-new-cron-object scaled\n"
    );
    let obj = get_json(&server, &["get", "ct", "my-new-cron-object"]);
    assert_eq!(obj["spec"]["replicas"], 3);
    assert_eq!(obj["metadata"]["generation"], 2);

    // The status subresource: the main resource ignores status, status ignores the rest.
    server.patch_status(
        "crontab",
        "my-new-cron-object",
        r#"{"status":{"replicas":3},"spec":{"image":"ignored"},"metadata":{"labels":{"ignored":"yes"}}}"#,
    );
    let obj = get_json(&server, &["get", "ct", "my-new-cron-object"]);
    assert_eq!(obj["status"]["replicas"], 3);
    assert_eq!(obj["spec"]["image"], "my-awesome-cron-image");
    assert!(obj["metadata"].get("labels").is_none(), "{obj}");
    assert_eq!(obj["metadata"]["generation"], 2);

    // Deleting the definition deletes its objects, then the resource leaves discovery.
    let deleted = server.kubectl(&["delete", "crd", "crontabs.stable.example.com"]);
    assert_eq!(
        deleted.ok(),
        "customresourcedefinition.apiextensions.k8s.io \"crontabs.stable.example.com\" deleted\n"
    );
    let gone = server.kubectl(&["get", "crd"]);
    assert_eq!(gone.ok(), "");
    assert!(
        gone.stderr.contains("No resources found"),
        "{}",
        gone.stderr
    );
    // kubectl may still have the resource in its discovery cache: either way it is gone.
    let after = server.kubectl(&["get", "crontabs"]);
    let said = after.fails();
    assert!(
        said.contains("the server doesn't have a resource type \"crontabs\"")
            || said.contains("the server could not find the requested resource"),
        "{said}"
    );
    let discovery = server.kubectl(&["get", "--raw", "/apis"]);
    assert!(!discovery.ok().contains("stable.example.com"));
}

#[test]
fn the_schema_refuses_invalid_objects_and_prunes_unknown_fields() {
    let server = ApiServer::start().unwrap();
    install(&server);
    let bad = MY_CRONTAB
        .replace("\"* * * * */5\"", "\"* * * *\"")
        .replace("replicas: 1", "replicas: 15");
    let refused = server.kubectl_stdin(&["apply", "-f", "-"], Some(&bad));
    assert_eq!(
        refused.fails(),
        "The CronTab \"my-new-cron-object\" is invalid: \n\
         * spec.cronSpec: Invalid value: \"* * * *\": spec.cronSpec in body should match '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'\n\
         * spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10\n"
    );
    assert!(server
        .kubectl(&["get", "ct"])
        .stderr
        .contains("No resources found"));

    // Unknown fields: refused by default (strict), dropped when validation is off.
    let extra = MY_CRONTAB.replace("  replicas: 1\n", "  replicas: 1\n  colour: blue\n");
    let strict = server.kubectl_stdin(&["create", "-f", "-"], Some(&extra));
    assert!(
        strict.fails().contains("unknown field \"spec.colour\""),
        "{}",
        strict.stderr
    );
    let lax = server.kubectl_stdin(&["create", "--validate=false", "-f", "-"], Some(&extra));
    lax.ok();
    let obj = get_json(&server, &["get", "ct", "my-new-cron-object"]);
    assert!(obj["spec"].get("colour").is_none(), "{obj}");

    // Custom resources have no strategic merge patch.
    let smp = server.kubectl(&[
        "patch",
        "ct",
        "my-new-cron-object",
        "--type=strategic",
        "-p",
        r#"{"spec":{"image":"x"}}"#,
    ]);
    assert!(
        smp.fails().contains("UnsupportedMediaType")
            || smp.stderr.contains("415")
            || smp.stderr.contains("unknown format"),
        "{}",
        smp.stderr
    );
}

#[test]
fn definitions_and_objects_survive_a_restart() {
    let mut server = ApiServer::start().unwrap();
    install(&server);
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(MY_CRONTAB))
        .ok();
    server.restart().unwrap();
    let rows = table_rows(server.kubectl(&["get", "ct"]).ok());
    assert_eq!(rows[1][0], "my-new-cron-object");
    // A new version added later is served from the next request on.
    let two = CRONTAB_CRD.replace(
        "  versions:\n",
        "  versions:\n    - name: v2\n      served: true\n      storage: false\n      schema:\n        openAPIV3Schema:\n          type: object\n          x-kubernetes-preserve-unknown-fields: true\n",
    );
    server.kubectl_stdin(&["apply", "-f", "-"], Some(&two)).ok();
    // Served from the next request on, with no wait.
    let listed = server.kubectl(&["get", "crontabs.v2.stable.example.com", "-o", "name"]);
    assert_eq!(
        listed.ok(),
        "crontab.stable.example.com/my-new-cron-object\n"
    );
    let v2 = get_json(
        &server,
        &[
            "get",
            "crontabs.v2.stable.example.com",
            "my-new-cron-object",
        ],
    );
    assert_eq!(v2["apiVersion"], "stable.example.com/v2");
}
