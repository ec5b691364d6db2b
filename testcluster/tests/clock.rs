//! What waits for time on a real cluster waits for the test's clock here, and happens at
//! once when the test moves it: a crash-looping container's back-off (an immediate restart,
//! then 10 s, then 20 s, as upstream's kubelet), a
//! container's `sleep 30` (so a Job completes), a CronJob's next minute.

mod common;

use std::time::Duration;

use common::eventually;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use tinykube_testcluster::TestCluster;

fn restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .map_or(-1, |c| c.restart_count)
}

fn waiting_reason(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .waiting
        .as_ref()?
        .reason
        .clone()
}

#[tokio::test]
async fn a_crash_loop_backs_off_on_the_clock() {
    let cluster = TestCluster::builder().manual_clock().start().await.unwrap();
    let pods: Api<Pod> = Api::default_namespaced(cluster.client());
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "crasher"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", "exit 1"]}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    eventually(
        "CrashLoopBackOff after the immediate first restart",
        || async {
            let p = pods.get("crasher").await.ok()?;
            (waiting_reason(&p).as_deref() == Some("CrashLoopBackOff") && restarts(&p) == 1)
                .then_some(())
        },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        restarts(&pods.get("crasher").await.unwrap()),
        1,
        "no restart before the clock moves"
    );

    cluster.advance(Duration::from_secs(10)).await;
    eventually("the second restart after 10 s", || async {
        let p = pods.get("crasher").await.ok()?;
        (restarts(&p) == 2 && waiting_reason(&p).as_deref() == Some("CrashLoopBackOff"))
            .then_some(())
    })
    .await;
    cluster.advance(Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        restarts(&pods.get("crasher").await.unwrap()),
        2,
        "the next back-off is 20 s"
    );
    cluster.advance(Duration::from_secs(10)).await;
    eventually("the third restart after 20 s", || async {
        (restarts(&pods.get("crasher").await.ok()?) == 3).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_job_of_sleep_30_completes_when_30_seconds_have_passed() {
    let cluster = TestCluster::builder().manual_clock().start().await.unwrap();
    let client = cluster.client();
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let job: Job = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "nap"},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "30"]}],
        }}},
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client);
    eventually("the Job's pod Running", || async {
        let list = pods
            .list(&ListParams::default().labels("job-name=nap"))
            .await
            .ok()?;
        let phase = list.items.first()?.status.as_ref()?.phase.clone()?;
        (phase == "Running").then_some(())
    })
    .await;
    cluster.advance(Duration::from_secs(20)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = jobs.get("nap").await.unwrap().status.unwrap_or_default();
    assert_eq!(status.succeeded.unwrap_or(0), 0, "20 s into a 30 s sleep");

    cluster.advance(Duration::from_secs(10)).await;
    let job = eventually("the Job Complete", || async {
        let j = jobs.get("nap").await.ok()?;
        let complete = j
            .status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .any(|c| c.type_ == "Complete" && c.status == "True");
        complete.then_some(j)
    })
    .await;
    let status = job.status.unwrap();
    let took =
        status.completion_time.unwrap().0.as_second() - status.start_time.unwrap().0.as_second();
    assert_eq!(took, 30, "the Job's times are the cluster's clock");
}

#[tokio::test]
async fn a_cronjob_fires_when_the_clock_reaches_its_minute() {
    let cluster = TestCluster::builder().manual_clock().start().await.unwrap();
    let client = cluster.client();
    let cronjobs: Api<CronJob> = Api::default_namespaced(client.clone());
    let cj: CronJob = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "tick"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure",
            "containers": [{"name": "c", "image": "busybox", "command": ["date"]}],
        }}}}},
    }))
    .unwrap();
    cronjobs.create(&PostParams::default(), &cj).await.unwrap();
    let jobs: Api<Job> = Api::default_namespaced(client);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        jobs.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "no Job before the minute"
    );

    cluster.advance(Duration::from_secs(61)).await;
    let name = eventually("a Job of the CronJob", || async {
        let list = jobs.list(&ListParams::default()).await.ok()?;
        list.items.first()?.metadata.name.clone()
    })
    .await;
    assert!(name.starts_with("tick-"), "{name}");
    eventually("lastScheduleTime on a whole minute", || async {
        let t = cronjobs
            .get("tick")
            .await
            .ok()?
            .status?
            .last_schedule_time?;
        (t.0.as_second() % 60 == 0).then_some(())
    })
    .await;
}
