//! Phase, conditions and container statuses of a pod from its containers' states, by table.

use super::*;
use serde_json::json;

fn pod(spec: serde_json::Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": "p", "generation": 1}, "spec": spec}))
        .unwrap()
}

fn exit(code: i32) -> State {
    State::Terminated(Exit {
        exit_code: code,
        reason: Exit::reason_for(code, false).into(),
        message: None,
        started_at: Timestamp::UNIX_EPOCH,
        finished_at: Timestamp::UNIX_EPOCH,
        container_id: "containerd://x".into(),
    })
}

fn running() -> State {
    State::Running {
        started_at: Timestamp::UNIX_EPOCH,
    }
}

fn waiting(reason: &str) -> State {
    State::Waiting {
        reason: reason.into(),
        message: None,
    }
}

#[test]
fn phase_follows_the_containers_and_the_restart_policy() {
    let one = json!({"containers": [{"name": "a", "image": "busybox"}]});
    let with_init = json!({"initContainers": [{"name": "i", "image": "busybox"}],
                           "containers": [{"name": "a", "image": "busybox"}]});
    // (spec, restart policy, init state, app state, app has a last exit, phase)
    type Case<'a> = (
        &'a serde_json::Value,
        &'a str,
        Option<State>,
        State,
        bool,
        &'a str,
    );
    let cases: Vec<Case> = vec![
        (
            &one,
            "Always",
            None,
            waiting("ContainerCreating"),
            false,
            "Pending",
        ),
        (&one, "Always", None, running(), false, "Running"),
        (&one, "Always", None, exit(0), false, "Running"),
        (
            &one,
            "Always",
            None,
            waiting("CrashLoopBackOff"),
            true,
            "Running",
        ),
        (&one, "OnFailure", None, exit(0), false, "Succeeded"),
        (&one, "OnFailure", None, exit(1), false, "Running"),
        (&one, "Never", None, exit(0), false, "Succeeded"),
        (&one, "Never", None, exit(1), false, "Failed"),
        (
            &with_init,
            "Always",
            Some(running()),
            waiting("PodInitializing"),
            false,
            "Pending",
        ),
        (
            &with_init,
            "Never",
            Some(exit(1)),
            waiting("PodInitializing"),
            false,
            "Failed",
        ),
        (
            &with_init,
            "Always",
            Some(exit(1)),
            waiting("PodInitializing"),
            false,
            "Pending",
        ),
        (
            &with_init,
            "Always",
            Some(exit(0)),
            running(),
            false,
            "Running",
        ),
    ];
    for (i, (spec, policy, init, app, last, want)) in cases.into_iter().enumerate() {
        let mut run = PodRun::new(&pod(spec.clone()), Timestamp::UNIX_EPOCH);
        run.restart_policy = policy.into();
        if let Some(s) = init {
            run.inits[0].state = s;
        }
        run.apps[0].state = app;
        if last {
            run.apps[0].last = match exit(1) {
                State::Terminated(e) => Some(e),
                _ => None,
            };
        }
        assert_eq!(run.phase(), want, "case {i}");
    }
}

#[test]
fn conditions_say_which_containers_hold_the_pod_back() {
    let p = pod(
        json!({"initContainers": [{"name": "init-myservice", "image": "busybox"},
                                           {"name": "init-mydb", "image": "busybox"}],
                        "containers": [{"name": "myapp-container", "image": "busybox"}]}),
    );
    let mut run = PodRun::new(&p, Timestamp::UNIX_EPOCH);
    run.inits[0].state = running();
    let conds = run.conditions(&p, run.phase());
    let by = |t: &str| conds.iter().find(|c| c.type_ == t).unwrap().clone();
    assert_eq!(by("Initialized").status, "False");
    assert_eq!(
        by("Initialized").message.as_deref(),
        Some("containers with incomplete status: [init-myservice init-mydb]")
    );
    assert_eq!(
        by("Ready").message.as_deref(),
        Some("containers with unready status: [myapp-container]")
    );
    let (apps, inits) = run.statuses();
    assert_eq!(
        apps[0]
            .state
            .as_ref()
            .unwrap()
            .waiting
            .as_ref()
            .unwrap()
            .reason
            .as_deref(),
        Some("PodInitializing")
    );
    assert_eq!(inits.unwrap().len(), 2);
    run.inits[0].state = exit(0);
    run.inits[1].state = exit(0);
    run.apps[0].state = running();
    run.apps[0].ready = true;
    let conds = run.conditions(&p, run.phase());
    assert!(conds.iter().all(|c| c.status == "True"), "{conds:?}");
}

#[test]
fn readiness_gates_hold_ready_but_not_containers_ready() {
    let mut p = pod(
        json!({"readinessGates": [{"conditionType": "example.com/feature-1"}],
                            "containers": [{"name": "a", "image": "nginx"}]}),
    );
    let mut run = PodRun::new(&p, Timestamp::UNIX_EPOCH);
    run.apps[0].state = running();
    run.apps[0].ready = true;
    let conds = run.conditions(&p, "Running");
    let status =
        |cs: &[PodCondition], t: &str| cs.iter().find(|c| c.type_ == t).unwrap().status.clone();
    assert_eq!(status(&conds, "Ready"), "False");
    assert_eq!(status(&conds, "ContainersReady"), "True");
    p.status = serde_json::from_value(
        json!({"conditions": [{"type": "example.com/feature-1", "status": "True"}]}),
    )
    .unwrap();
    let conds = run.conditions(&p, "Running");
    assert_eq!(status(&conds, "Ready"), "True");
}
