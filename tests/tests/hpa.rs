//! HorizontalPodAutoscalers with the real kubectl: `kubectl autoscale` as the upstream
//! walkthrough runs it, `kubectl get hpa` columns, 422 messages, the same object through
//! autoscaling/v1 and v2, and the controller's FailedGetResourceMetric condition and events
//! while no metrics API is served.

use std::time::Duration;

use tinykube_tests::{eventually, table_rows, ApiServer, ControllerManager};

const PHP_APACHE: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: php-apache
spec:
  selector:
    matchLabels:
      run: php-apache
  template:
    metadata:
      labels:
        run: php-apache
    spec:
      containers:
      - name: php-apache
        image: registry.k8s.io/hpa-example
        ports:
        - containerPort: 80
        resources:
          limits:
            cpu: 500m
          requests:
            cpu: 200m
";

#[test]
fn autoscale_get_validate_and_convert() {
    let server = ApiServer::start().unwrap();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(PHP_APACHE))
        .ok();
    let out = server.kubectl(&[
        "autoscale",
        "deployment",
        "php-apache",
        "--cpu-percent=50",
        "--min=1",
        "--max=10",
    ]);
    assert_eq!(
        out.ok().trim(),
        "horizontalpodautoscaler.autoscaling/php-apache autoscaled"
    );

    let rows = table_rows(server.kubectl(&["get", "hpa"]).ok());
    assert_eq!(
        rows[0],
        [
            "NAME",
            "REFERENCE",
            "TARGETS",
            "MINPODS",
            "MAXPODS",
            "REPLICAS",
            "AGE"
        ]
    );
    assert_eq!(
        rows[1][..7],
        [
            "php-apache",
            "Deployment/php-apache",
            "cpu:",
            "<unknown>/50%",
            "1",
            "10",
            "0"
        ]
    );

    // The stored v2 object, and the same through v1.
    let v2 = server.kubectl(&[
        "get",
        "horizontalpodautoscalers.v2.autoscaling",
        "php-apache",
        "-o",
        "jsonpath={.apiVersion} {.spec.metrics[0].resource.name} {.spec.metrics[0].resource.target.averageUtilization} {.spec.minReplicas}",
    ]);
    assert_eq!(v2.ok(), "autoscaling/v2 cpu 50 1");
    let v1 = server.kubectl(&[
        "get",
        "horizontalpodautoscalers.v1.autoscaling",
        "php-apache",
        "-o",
        "jsonpath={.apiVersion} {.spec.targetCPUUtilizationPercentage} {.spec.scaleTargetRef.kind}",
    ]);
    assert_eq!(v1.ok(), "autoscaling/v1 50 Deployment");

    // A v1 object with a memory metric in its annotation keeps it in v2.
    let v1_manifest = r#"apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata:
  name: web
  annotations:
    autoscaling.alpha.kubernetes.io/metrics: '[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"100Mi"}}]'
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: php-apache}
  maxReplicas: 4
  targetCPUUtilizationPercentage: 70
"#;
    server
        .kubectl_stdin(&["create", "-f", "-"], Some(v1_manifest))
        .ok();
    let both = server.kubectl(&[
        "get",
        "horizontalpodautoscalers.v2.autoscaling",
        "web",
        "-o",
        "jsonpath={.spec.metrics[0].resource.target.averageUtilization} {.spec.metrics[1].resource.name} {.spec.metrics[1].resource.target.averageValue} {.metadata.annotations}",
    ]);
    assert_eq!(both.ok(), "70 memory 100Mi ");
    let rows = table_rows(server.kubectl(&["get", "hpa", "web"]).ok());
    assert_eq!(
        rows[1][2..6],
        ["cpu:", "<unknown>/70%,", "memory:", "<unknown>/100Mi"]
    );

    // Validation errors, with upstream's field paths and messages.
    let bad = r#"apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: bad
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment}
  minReplicas: 5
  maxReplicas: 2
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 0}
"#;
    let err = server
        .kubectl_stdin(&["create", "-f", "-"], Some(bad))
        .fails()
        .to_string();
    for want in [
        r#"The HorizontalPodAutoscaler "bad" is invalid: "#,
        "* spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
        "* spec.scaleTargetRef.name: Required value",
        "* spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
    ] {
        assert!(err.contains(want), "{want} in {err}");
    }
}

#[test]
fn without_a_metrics_api_the_controller_reports_failed_get_resource_metric() {
    let server = ApiServer::start().unwrap();
    let _cm = ControllerManager::start(
        &server,
        &[
            "--controllers=deployment,replicaset,horizontalpodautoscaling",
            "--horizontal-pod-autoscaler-sync-period=1s",
        ],
    )
    .unwrap();
    server
        .kubectl_stdin(&["apply", "-f", "-"], Some(PHP_APACHE))
        .ok();
    server
        .kubectl(&[
            "autoscale",
            "deployment",
            "php-apache",
            "--cpu-percent=50",
            "--min=1",
            "--max=10",
        ])
        .ok();
    let reason = |ty: &str| {
        server
            .kubectl(&[
                "get",
                "hpa",
                "php-apache",
                "-o",
                &format!("jsonpath={{.status.conditions[?(@.type==\"{ty}\")].reason}}"),
            ])
            .stdout
    };
    assert!(
        eventually(Duration::from_secs(20), || reason("ScalingActive")
            == "FailedGetResourceMetric"),
        "{}",
        server
            .kubectl(&["get", "hpa", "php-apache", "-o", "yaml"])
            .stdout
    );
    assert_eq!(reason("AbleToScale"), "SucceededGetScale");
    let message = server.kubectl(&[
        "get",
        "hpa",
        "php-apache",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"ScalingActive\")].message}",
    ]);
    assert_eq!(
        message.ok(),
        "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)"
    );
    assert!(eventually(Duration::from_secs(10), || {
        let events = server.kubectl(&[
            "get",
            "events",
            "--field-selector",
            "involvedObject.kind=HorizontalPodAutoscaler",
            "-o",
            "jsonpath={range .items[*]}{.reason}/{.source.component}{\"\\n\"}{end}",
        ]);
        let text = events.stdout;
        text.contains("FailedGetResourceMetric/horizontal-pod-autoscaler")
            && text.contains("FailedComputeMetricsReplicas/horizontal-pod-autoscaler")
    }));
    // kubectl describe shows the conditions and events.
    let described = server.kubectl(&["describe", "hpa", "php-apache"]);
    let text = described.ok();
    for want in [
        "Reference:",
        "Deployment/php-apache",
        "resource cpu on pods  (as a percentage of request):  <unknown> / 50%",
        "ScalingActive  False   FailedGetResourceMetric",
        "FailedComputeMetricsReplicas",
    ] {
        assert!(text.contains(want), "{want} in\n{text}");
    }
}
