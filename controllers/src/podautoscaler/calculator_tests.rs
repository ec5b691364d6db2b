//! Tables for the replica calculator, after upstream's replica_calculator_test cases.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Container, Pod, PodCondition, PodSpec, PodStatus, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as Q;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

use super::*;

const NOW: i64 = 1_000_000;

fn at(secs_ago: i64) -> Timestamp {
    Timestamp::from_second(NOW - secs_ago).unwrap()
}

/// A pod `name` in `phase`, requesting `request` cpu (milli), started `started` seconds ago,
/// Ready (`ready`) since `changed` seconds ago.
fn pod(name: &str, phase: &str, request: i64, ready: bool, started: i64, changed: i64) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(BTreeMap::from([
                        ("cpu".to_string(), Q(format!("{request}m"))),
                        ("memory".to_string(), Q("100Mi".into())),
                    ])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(PodStatus {
            phase: Some(phase.into()),
            start_time: Some(Time(at(started))),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                last_transition_time: Some(Time(at(changed))),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

/// A long-running ready pod.
fn running(name: &str, request: i64) -> Pod {
    pod(name, "Running", request, true, 3600, 3500)
}

fn samples(values: &[(&str, i64)]) -> PodMetrics {
    values
        .iter()
        .map(|(n, v)| {
            (
                n.to_string(),
                PodMetric {
                    value: *v,
                    timestamp: at(10),
                    window: Duration::from_secs(30),
                },
            )
        })
        .collect()
}

#[test]
fn utilization_targets() {
    let calc = Calculator::default();
    let three = || vec![running("a", 1000), running("b", 1000), running("c", 1000)];
    type Row = (
        &'static str,
        i32,
        Vec<Pod>,
        PodMetrics,
        i32,
        Result<(i32, i32), CalcError>,
    );
    let rows: Vec<Row> = vec![
        (
            "scale up: 90% of request against 30%",
            3,
            three(),
            samples(&[("a", 900), ("b", 900), ("c", 900)]),
            30,
            Ok((9, 90)),
        ),
        (
            "scale down",
            3,
            three(),
            samples(&[("a", 100), ("b", 100), ("c", 100)]),
            50,
            Ok((1, 10)),
        ),
        (
            "within the tolerance nothing moves",
            3,
            three(),
            samples(&[("a", 520), ("b", 520), ("c", 520)]),
            50,
            Ok((3, 52)),
        ),
        (
            "the walkthrough: one pod at 250% of a 200m request, target 50%",
            1,
            vec![running("a", 200)],
            samples(&[("a", 500)]),
            50,
            Ok((5, 250)),
        ),
        (
            "a missing pod counts as using nothing when scaling up",
            3,
            three(),
            samples(&[("a", 900), ("b", 900)]),
            30,
            Ok((6, 90)),
        ),
        (
            "a missing pod counts as using its request when scaling down",
            3,
            three(),
            samples(&[("a", 100), ("b", 100)]),
            50,
            Ok((3, 10)),
        ),
        (
            "a pending pod is unready: it counts as zero when scaling up",
            3,
            vec![
                running("a", 1000),
                running("b", 1000),
                pod("c", "Pending", 1000, false, 1, 1),
            ],
            samples(&[("a", 900), ("b", 900)]),
            30,
            Ok((6, 90)),
        ),
        (
            "an unready pod is not counted when scaling down",
            3,
            vec![
                running("a", 1000),
                running("b", 1000),
                pod("c", "Pending", 1000, false, 1, 1),
            ],
            samples(&[("a", 100), ("b", 100)]),
            50,
            Ok((1, 10)),
        ),
        (
            "a pod still initializing whose sample predates a window of readiness is unready",
            2,
            vec![running("a", 1000), pod("b", "Running", 1000, true, 20, 15)],
            samples(&[("a", 900), ("b", 2000)]),
            30,
            Ok((3, 90)),
        ),
        (
            "deleted and failed pods are ignored",
            2,
            vec![running("a", 1000), pod("b", "Failed", 1000, false, 100, 50)],
            samples(&[("a", 600), ("b", 900)]),
            30,
            Ok((2, 60)),
        ),
        (
            "no pods",
            3,
            vec![],
            samples(&[]),
            50,
            Err(CalcError::NoPods),
        ),
        (
            "no ready samples",
            1,
            vec![pod("a", "Pending", 1000, false, 1, 1)],
            samples(&[("a", 500)]),
            50,
            Err(CalcError::NoReadyMetrics),
        ),
    ];
    for (what, current, pods, metrics, target, want) in rows {
        let got = calc
            .resource_replicas(current, target, "cpu", None, &pods, metrics, at(0))
            .map(|u| (u.replicas, u.utilization));
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn requests_must_be_set() {
    let mut p = running("web-1", 100);
    p.spec.as_mut().unwrap().containers[0].resources = None;
    let got = Calculator::default().resource_replicas(
        1,
        50,
        "cpu",
        None,
        &[p],
        samples(&[("web-1", 50)]),
        at(0),
    );
    assert_eq!(
        got.unwrap_err().to_string(),
        "missing request for cpu in container app of Pod web-1"
    );
}

#[test]
fn average_value_targets() {
    let calc = Calculator::default();
    let pods = vec![running("a", 1000), running("b", 1000)];
    // memory: 300 and 500 (milli-units of bytes here) against 200 per pod.
    let got = calc.raw_resource_replicas(
        2,
        200,
        "memory",
        &pods,
        samples(&[("a", 300), ("b", 500)]),
        at(0),
    );
    assert_eq!(got, Ok((4, 400)));
    let within = calc.raw_resource_replicas(
        2,
        400,
        "memory",
        &pods,
        samples(&[("a", 380), ("b", 400)]),
        at(0),
    );
    assert_eq!(within, Ok((2, 390)));
}
