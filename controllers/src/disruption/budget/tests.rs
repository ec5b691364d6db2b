//! Table tests of the budget arithmetic.

use super::*;
use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelectorRequirement, ObjectMeta};

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(second).unwrap()
}

fn pod(name: &str, ready: bool, owner_uid: Option<&str>) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            owner_references: owner_uid.map(|uid| {
                vec![OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "ReplicaSet".into(),
                    name: format!("rs-{uid}"),
                    uid: uid.into(),
                    controller: Some(true),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        },
        spec: None,
        status: Some(PodStatus {
            phase: Some("Running".into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    })
}

fn deleting(p: Arc<Pod>) -> Arc<Pod> {
    let mut p = (*p).clone();
    p.metadata.deletion_timestamp = Some(Time(at(0)));
    Arc::new(p)
}

fn int(i: i32) -> Option<IntOrString> {
    Some(IntOrString::Int(i))
}

fn pct(s: &str) -> Option<IntOrString> {
    Some(IntOrString::String(s.into()))
}

fn spec(min: Option<IntOrString>, max: Option<IntOrString>) -> PodDisruptionBudgetSpec {
    PodDisruptionBudgetSpec {
        min_available: min,
        max_unavailable: max,
        ..Default::default()
    }
}

/// A finder that knows ReplicaSet `rs1` (scale 4) and `rs2` (scale 2).
fn find(owner: &OwnerReference, _ns: &str) -> Result<Option<ControllerScale>, BudgetError> {
    let scale = match owner.uid.as_str() {
        "rs1" => 4,
        "rs2" => 2,
        _ => return Ok(None),
    };
    Ok(Some(ControllerScale {
        uid: owner.uid.clone(),
        scale,
    }))
}

#[test]
fn percentages_round_up_and_bad_values_are_errors() {
    let table = [
        (IntOrString::Int(3), 10, Ok(3)),
        (IntOrString::String("50%".into()), 5, Ok(3)),
        (IntOrString::String("33%".into()), 10, Ok(4)),
        (IntOrString::String("100%".into()), 4, Ok(4)),
        (IntOrString::String("0%".into()), 4, Ok(0)),
        (
            IntOrString::String("3".into()),
            4,
            Err(BudgetError::IntOrPercent(
                "invalid type: string is not a percentage".into(),
            )),
        ),
        (
            IntOrString::String("x%".into()),
            4,
            Err(BudgetError::IntOrPercent(
                "invalid value \"x%\": strconv.Atoi: parsing \"x\": invalid syntax".into(),
            )),
        ),
    ];
    for (v, total, want) in table {
        assert_eq!(scaled_value(&v, total), want, "{v:?} of {total}");
    }
}

#[test]
fn expected_and_desired_pods_follow_the_spec() {
    let managed: Vec<Arc<Pod>> = (0..3)
        .map(|i| pod(&format!("web-{i}"), true, Some("rs1")))
        .collect();
    let mixed = vec![
        pod("a", true, Some("rs2")),
        pod("b", true, Some("rs2")),
        pod("bare", true, None),
    ];
    let lost = vec![
        pod("a", true, Some("rs1")),
        pod("stray", true, Some("gone")),
    ];
    let ok = |count, desired_healthy, unmanaged: &[&str]| {
        Ok(Expected {
            count,
            desired_healthy,
            unmanaged: unmanaged.iter().map(|s| s.to_string()).collect(),
        })
    };
    let table = [
        // An integer minAvailable counts the matching pods, whoever owns them.
        (spec(int(3), None), &managed, ok(3, 3, &[])),
        (spec(int(2), None), &mixed, ok(3, 2, &[])),
        (spec(int(2), None), &lost, ok(2, 2, &[])),
        // Percentages and maxUnavailable count the controllers' scale, each once.
        (spec(pct("50%"), None), &managed, ok(4, 2, &[])),
        (spec(None, int(1)), &managed, ok(4, 3, &[])),
        (spec(None, pct("25%")), &managed, ok(4, 3, &[])),
        (spec(None, int(10)), &managed, ok(4, 0, &[])),
        (spec(None, int(1)), &mixed, ok(2, 1, &["bare"])),
        (
            spec(None, int(1)),
            &lost,
            Err(BudgetError::NoController("stray".into())),
        ),
        (
            spec(pct("half"), None),
            &managed,
            Err(BudgetError::IntOrPercent(
                "invalid type: string is not a percentage".into(),
            )),
        ),
        (spec(None, None), &managed, ok(0, 0, &[])),
    ];
    for (i, (s, pods, want)) in table.into_iter().enumerate() {
        assert_eq!(expected(&s, pods, find), want, "row {i}");
    }
}

#[test]
fn pending_evictions_expire_after_the_deletion_timeout() {
    let now = at(1000);
    let pods = vec![
        pod("a", true, None),
        pod("recent", true, None),
        pod("expired", true, None),
        deleting(pod("terminating", true, None)),
        pod("unready", false, None),
    ];
    let recorded: BTreeMap<String, Time> = [
        ("recent", 970),
        ("expired", 800),
        ("terminating", 990),
        ("gone", 990),
        ("unready", 995),
    ]
    .into_iter()
    .map(|(n, s)| (n.to_string(), Time(at(s))))
    .collect();
    let (kept, recheck, not_deleted) = disrupted_pods(&pods, Some(&recorded), now);
    assert_eq!(
        kept.keys().collect::<Vec<_>>(),
        ["recent", "unready"],
        "gone, terminating and expired entries are dropped"
    );
    assert_eq!(recheck, Some(at(970 + 120)), "the earliest expiry");
    let names: Vec<_> = not_deleted
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["expired"]);
    // `a` and `expired` are healthy; `recent` is about to go, `terminating` is going.
    assert_eq!(count_healthy(&pods, &kept, now), 2);
    assert_eq!(
        disrupted_pods(&pods, None, now),
        (BTreeMap::new(), None, vec![])
    );
    // At exactly the expiry the entry is kept but no longer keeps its pod out.
    let edge: BTreeMap<String, Time> = [("recent".to_string(), Time(at(880)))].into();
    let (kept, _, gone) = disrupted_pods(&pods, Some(&edge), now);
    assert_eq!((kept.len(), gone.len()), (1, 0));
    assert_eq!(count_healthy(&pods, &kept, now), 3);
}

#[test]
fn disruptions_allowed_needs_expected_pods_and_spare_healthy_ones() {
    let table = [
        ((4, 3, 4), 1),
        ((5, 3, 5), 2),
        ((3, 3, 4), 0),
        ((2, 3, 4), 0),
        ((5, 3, 0), 0),
        ((1, 0, 1), 1),
    ];
    for ((healthy, desired, expected), want) in table {
        assert_eq!(
            disruptions_allowed(healthy, desired, expected),
            want,
            "{healthy}/{desired}/{expected}"
        );
    }
}

fn budget(generation: i64, status: Option<PodDisruptionBudgetStatus>) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            generation: Some(generation),
            ..Default::default()
        },
        spec: Some(spec(int(3), None)),
        status,
    }
}

fn created() -> Option<PodDisruptionBudgetStatus> {
    Some(PodDisruptionBudgetStatus {
        current_healthy: Some(0),
        desired_healthy: Some(0),
        expected_pods: Some(0),
        disruptions_allowed: Some(0),
        ..Default::default()
    })
}

fn condition(status: &PodDisruptionBudgetStatus) -> (String, String, Timestamp) {
    let c = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == DISRUPTION_ALLOWED)
        .expect("the DisruptionAllowed condition");
    (c.status.clone(), c.reason.clone(), c.last_transition_time.0)
}

#[test]
fn status_is_written_only_when_something_changed() {
    let four = Expected {
        count: 4,
        desired_healthy: 3,
        unmanaged: vec![],
    };
    let fresh = budget(1, created());
    let s = next_status(&fresh, 4, &four, BTreeMap::new(), at(10)).expect("a fresh budget");
    assert_eq!(
        (
            s.current_healthy,
            s.desired_healthy,
            s.expected_pods,
            s.disruptions_allowed,
            s.observed_generation,
            s.disrupted_pods.clone()
        ),
        (Some(4), Some(3), Some(4), Some(1), Some(1), None)
    );
    assert_eq!(
        condition(&s),
        ("True".into(), SUFFICIENT_PODS.into(), at(10))
    );

    let synced = budget(1, Some(s.clone()));
    assert_eq!(
        next_status(&synced, 4, &four, BTreeMap::new(), at(20)),
        None
    );

    // A pod went: no disruption allowed, and the condition flips (with a new transition time).
    let s2 = next_status(&synced, 3, &four, BTreeMap::new(), at(30)).expect("changed");
    assert_eq!(s2.disruptions_allowed, Some(0));
    assert_eq!(
        condition(&s2),
        ("False".into(), INSUFFICIENT_PODS.into(), at(30))
    );

    // A spec change (new generation) is observed even when the counts stay.
    let bumped = budget(2, Some(s.clone()));
    let s3 = next_status(&bumped, 4, &four, BTreeMap::new(), at(40)).expect("new generation");
    assert_eq!(s3.observed_generation, Some(2));
    assert_eq!(
        condition(&s3),
        ("True".into(), SUFFICIENT_PODS.into(), at(10))
    );

    // A pending eviction is kept in the status.
    let pending: BTreeMap<String, Time> = [("web-1".to_string(), Time(at(5)))].into();
    let s4 = next_status(&synced, 4, &four, pending.clone(), at(50)).expect("pending eviction");
    assert_eq!(s4.disrupted_pods, Some(pending));
}

#[test]
fn fail_safe_forbids_disruptions_and_says_why() {
    let mut status = created().unwrap();
    status.disruptions_allowed = Some(2);
    status.observed_generation = Some(1);
    let s = fail_safe_status(
        &budget(1, Some(status)),
        "found no controllers for pod \"x\"",
        at(7),
    );
    assert_eq!(s.disruptions_allowed, Some(0));
    let c = &s.conditions.as_ref().unwrap()[0];
    assert_eq!(
        (
            c.status.as_str(),
            c.reason.as_str(),
            c.message.as_str(),
            c.observed_generation
        ),
        (
            "False",
            SYNC_FAILED,
            "found no controllers for pod \"x\"",
            Some(1)
        )
    );
    // A failed budget is not up to date: the next good sync rewrites the condition.
    assert!(!conditions_up_to_date(&budget(1, Some(s))));
}

#[test]
fn set_condition_moves_the_transition_time_only_on_a_status_change() {
    let cond = |status: &str, reason: &str, t: i64| Condition {
        type_: DISRUPTION_ALLOWED.into(),
        status: status.into(),
        reason: reason.into(),
        message: String::new(),
        observed_generation: Some(1),
        last_transition_time: Time(at(t)),
    };
    let mut list = vec![];
    assert!(set_condition(&mut list, cond("True", SUFFICIENT_PODS, 1)));
    assert!(!set_condition(&mut list, cond("True", SUFFICIENT_PODS, 2)));
    assert_eq!(list[0].last_transition_time.0, at(1));
    assert!(set_condition(
        &mut list,
        cond("False", INSUFFICIENT_PODS, 3)
    ));
    assert_eq!(list[0].last_transition_time.0, at(3));
    assert!(set_condition(&mut list, cond("False", SYNC_FAILED, 4)));
    assert_eq!((list.len(), list[0].last_transition_time.0), (1, at(3)));
}

#[test]
fn selectors_print_as_go_does() {
    let sel = LabelSelector {
        match_labels: Some([("app".to_string(), "web".to_string())].into()),
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "tier".into(),
            operator: "In".into(),
            values: Some(vec!["a".into(), "b".into()]),
        }]),
    };
    assert_eq!(
        selector_display(Some(&sel)),
        "&LabelSelector{MatchLabels:map[string]string{app: web,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:tier,Operator:In,Values:[a b],},},}"
    );
    assert_eq!(
        selector_display(Some(&LabelSelector::default())),
        "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}"
    );
}
