//! The CronJob controller's decisions, pure: which scheduled time is due, when to look again,
//! the Job a scheduled time makes, and which finished Jobs fall out of the history. Time is a
//! parameter, so every rule has a table test.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use tinykube_proto::cron::Schedule;

/// An API time as chrono's (the cron crate's) time.
pub fn instant(t: &Time) -> DateTime<Utc> {
    DateTime::from_timestamp(t.0.as_second(), t.0.subsec_nanosecond().max(0) as u32)
        .unwrap_or_default()
}

/// A chrono time as an API time.
pub fn api_time(t: DateTime<Utc>) -> Time {
    Time(Timestamp::new(t.timestamp(), t.timestamp_subsec_nanos() as i32).unwrap_or_default())
}

/// Upstream's annotation with the time a Job was scheduled for.
pub const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";
/// Upstream looks a little after the scheduled time (`nextScheduleDelta`).
pub const NEXT_SCHEDULE_DELTA: chrono::Duration = chrono::Duration::milliseconds(100);
/// More missed start times than this make a warning event.
pub const TOO_MANY_MISSED: i64 = 100;

/// The most recent scheduled time not after `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recent {
    /// Creation time or last schedule time (moved up to the starting deadline when asked).
    pub earliest: DateTime<Utc>,
    /// The most recent time a Job should have started at, if any came since `earliest`.
    pub most_recent: Option<DateTime<Utc>>,
    /// How many start times came since `earliest` (roughly, as upstream counts them).
    pub missed: i64,
}

/// Upstream's mostRecentScheduleTime. `Err` for a schedule that never fires again or fires
/// less than a second apart (`0 0 31 2 *`).
pub fn most_recent(
    cj: &CronJob,
    schedule: &Schedule,
    zone: Option<Tz>,
    now: DateTime<Utc>,
    with_starting_deadline: bool,
) -> Result<Recent, String> {
    let mut earliest = cj
        .status
        .as_ref()
        .and_then(|s| s.last_schedule_time.as_ref())
        .or(cj.metadata.creation_timestamp.as_ref())
        .map(instant)
        .unwrap_or(now);
    if with_starting_deadline {
        if let Some(sds) = cj.spec.starting_deadline_seconds {
            let deadline = now - chrono::Duration::seconds(sds);
            if deadline > earliest {
                earliest = deadline;
            }
        }
    }
    let never = || "the schedule never fires again".to_string();
    let t1 = schedule.next_after(earliest, zone).ok_or_else(never)?;
    let t2 = schedule.next_after(t1, zone).ok_or_else(never)?;
    if now < t1 {
        return Ok(Recent {
            earliest,
            most_recent: None,
            missed: 0,
        });
    }
    if now < t2 {
        return Ok(Recent {
            earliest,
            most_recent: Some(t1),
            missed: 1,
        });
    }
    let interval = (t2 - t1).num_seconds();
    if interval < 1 {
        return Err("time difference between two schedules is less than 1 second".into());
    }
    let missed = (now - t1).num_seconds() / interval + 1;
    // Jump close to `now` by the interval (schedules are not always regular, so step back one
    // more), then walk the schedule to the last time not after `now`.
    let mut t = t1 + chrono::Duration::seconds(interval * (missed - 2).max(0));
    if t > now {
        t = t1;
    }
    while let Some(next) = schedule.next_after(t, zone) {
        if next > now {
            break;
        }
        t = next;
    }
    Ok(Recent {
        earliest,
        most_recent: Some(t),
        missed,
    })
}

/// How long until the controller should look at `cj` again (upstream's
/// nextScheduleTimeDuration): the next scheduled time after the most recent one, plus 100 ms.
pub fn requeue_after(
    cj: &CronJob,
    schedule: &Schedule,
    zone: Option<Tz>,
    now: DateTime<Utc>,
) -> Option<std::time::Duration> {
    let from = match most_recent(cj, schedule, zone, now, false) {
        Err(_) => now,
        Ok(Recent {
            most_recent: Some(t),
            ..
        }) => t,
        Ok(Recent { earliest, .. }) => earliest,
    };
    let next = schedule.next_after(from, zone)?;
    let wait = next + NEXT_SCHEDULE_DELTA - now;
    Some(wait.to_std().unwrap_or_default())
}

/// The name of the Job for a scheduled time: the minutes since the epoch, so that a
/// controller restarted between creating a Job and recording it creates no second one.
pub fn job_name(cj_name: &str, scheduled: DateTime<Utc>) -> String {
    format!("{cj_name}-{}", scheduled.timestamp().div_euclid(60))
}

/// The Job a CronJob starts at `scheduled`: the template's labels and annotations, the
/// scheduled-timestamp annotation in the CronJob's zone, a controller reference.
pub fn job_for(cj: &CronJob, scheduled: DateTime<Utc>, zone: Tz) -> Job {
    let template = &cj.spec.job_template;
    let template_meta = template.metadata.as_ref();
    let mut annotations: BTreeMap<String, String> = template_meta
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    annotations.insert(
        SCHEDULED_TIMESTAMP.into(),
        scheduled
            .with_timezone(&zone)
            .to_rfc3339_opts(SecondsFormat::Secs, true),
    );
    let name = cj.metadata.name.clone().unwrap_or_default();
    Job {
        metadata: ObjectMeta {
            name: Some(job_name(&name, scheduled)),
            namespace: cj.metadata.namespace.clone(),
            labels: template_meta.and_then(|m| m.labels.clone()),
            annotations: Some(annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: "batch/v1".into(),
                kind: "CronJob".into(),
                name,
                uid: cj.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// `Complete` or `Failed` once a Job has finished.
pub fn finished(job: &Job) -> Option<&'static str> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions.iter().find_map(|c| {
        (c.status == "True")
            .then_some(c.type_.as_str())
            .and_then(|t| match t {
                "Complete" => Some("Complete"),
                "Failed" => Some("Failed"),
                _ => None,
            })
    })
}

/// Of the finished Jobs, those beyond the history limits, oldest first (by start time, then
/// name; a Job that never started counts as newest, as upstream's byJobStartTime).
pub fn beyond_history<'a>(cj: &CronJob, jobs: &[&'a Job]) -> Vec<&'a Job> {
    let limits = [
        ("Complete", cj.spec.successful_jobs_history_limit),
        ("Failed", cj.spec.failed_jobs_history_limit),
    ];
    let mut out = Vec::new();
    for (kind, limit) in limits {
        let Some(limit) = limit else { continue };
        let mut done: Vec<&'a Job> = jobs
            .iter()
            .copied()
            .filter(|j| finished(j) == Some(kind))
            .collect();
        let extra = done.len().saturating_sub(limit.max(0) as usize);
        if extra == 0 {
            continue;
        }
        done.sort_by(|a, b| {
            let start = |j: &Job| j.status.as_ref().and_then(|s| s.start_time.clone());
            match (start(a), start(b)) {
                (Some(x), Some(y)) if x != y => x.0.cmp(&y.0),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                _ => a.metadata.name.cmp(&b.metadata.name),
            }
        });
        out.extend(done.into_iter().take(extra));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::{CronJobSpec, CronJobStatus, JobCondition, JobStatus};

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn cronjob(created: &str, last: Option<&str>, deadline: Option<i64>) -> CronJob {
        CronJob {
            metadata: ObjectMeta {
                name: Some("hello".into()),
                namespace: Some("default".into()),
                uid: Some("u1".into()),
                creation_timestamp: Some(api_time(at(created))),
                ..ObjectMeta::default()
            },
            spec: CronJobSpec {
                schedule: "*/1 * * * *".into(),
                starting_deadline_seconds: deadline,
                successful_jobs_history_limit: Some(3),
                failed_jobs_history_limit: Some(1),
                ..CronJobSpec::default()
            },
            status: last.map(|l| CronJobStatus {
                last_schedule_time: Some(api_time(at(l))),
                ..CronJobStatus::default()
            }),
        }
    }

    #[test]
    fn the_most_recent_time_is_the_last_one_not_after_now() {
        let every_minute = Schedule::parse("*/1 * * * *").unwrap();
        for (created, last, deadline, now, want, missed) in [
            // Created mid-minute: nothing due before the next minute.
            (
                "2026-11-25T10:00:30Z",
                None,
                None,
                "2026-11-25T10:00:50Z",
                None,
                0,
            ),
            (
                "2026-11-25T10:00:30Z",
                None,
                None,
                "2026-11-25T10:01:00Z",
                Some("2026-11-25T10:01:00Z"),
                1,
            ),
            // Already scheduled at 10:01: the next one is due at 10:02.
            (
                "2026-11-25T10:00:30Z",
                Some("2026-11-25T10:01:00Z"),
                None,
                "2026-11-25T10:01:40Z",
                None,
                0,
            ),
            // Down for an hour: the most recent is the last minute, 61 missed.
            (
                "2026-11-25T10:00:30Z",
                Some("2026-11-25T10:01:00Z"),
                None,
                "2026-11-25T11:02:10Z",
                Some("2026-11-25T11:02:00Z"),
                61,
            ),
            // A starting deadline hides what is older than it.
            (
                "2026-11-25T10:00:30Z",
                Some("2026-11-25T10:01:00Z"),
                Some(30),
                "2026-11-25T11:02:10Z",
                Some("2026-11-25T11:02:00Z"),
                1,
            ),
        ] {
            let cj = cronjob(created, last, deadline);
            let r = most_recent(&cj, &every_minute, None, at(now), true).unwrap();
            assert_eq!(r.most_recent, want.map(at), "{created} {last:?} {now}");
            assert_eq!(r.missed, missed, "{created} {last:?} {now}");
        }
    }

    #[test]
    fn an_irregular_schedule_still_finds_its_last_time() {
        let s = Schedule::parse("0 9,17 * * *").unwrap();
        let cj = cronjob("2026-11-20T08:00:00Z", None, None);
        let r = most_recent(&cj, &s, None, at("2026-11-25T12:00:00Z"), false).unwrap();
        assert_eq!(r.most_recent, Some(at("2026-11-25T09:00:00Z")));
    }

    #[test]
    fn requeue_waits_for_the_next_time() {
        let s = Schedule::parse("*/5 * * * *").unwrap();
        let cj = cronjob("2026-11-25T10:00:30Z", Some("2026-11-25T10:05:00Z"), None);
        let wait = requeue_after(&cj, &s, None, at("2026-11-25T10:07:00Z")).unwrap();
        assert_eq!(wait, std::time::Duration::from_millis(180_100));
    }

    #[test]
    fn a_manual_clock_walks_the_schedule_one_requeue_at_a_time() {
        let s = Schedule::parse("*/5 * * * *").unwrap();
        let created = at("2026-11-25T10:00:30Z");
        let clock = tinykube_clock::Clock::manual(created.into());
        let mut cj = cronjob("2026-11-25T10:00:30Z", None, None);
        // Each pass: what is due now, then how long until the next one (plus upstream's 100 ms).
        let mut due = Vec::new();
        for _ in 0..3 {
            let recent = most_recent(&cj, &s, None, clock.utc(), true).unwrap();
            if let Some(t) = recent.most_recent {
                due.push(t.format("%H:%M:%S").to_string());
                cj.status
                    .get_or_insert_with(Default::default)
                    .last_schedule_time = Some(api_time(t));
            }
            let wait = requeue_after(&cj, &s, None, clock.utc()).unwrap();
            clock.advance(wait);
        }
        assert_eq!(due, ["10:05:00", "10:10:00"]);
        assert_eq!(clock.utc(), at("2026-11-25T10:15:00.1Z"));
    }

    #[test]
    fn jobs_are_named_by_the_minute_and_stamped_in_the_zone() {
        let cj = cronjob("2026-11-25T10:00:30Z", None, None);
        let t = at("2026-11-25T10:01:00Z");
        let job = job_for(&cj, t, "Asia/Tokyo".parse().unwrap());
        assert_eq!(job.metadata.name.as_deref(), Some("hello-29926681"));
        assert_eq!(
            job.metadata.annotations.unwrap()[SCHEDULED_TIMESTAMP],
            "2026-11-25T19:01:00+09:00"
        );
        let owner = &job.metadata.owner_references.unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.controller),
            ("CronJob", Some(true))
        );
    }

    fn done(name: &str, kind: &str, started: &str) -> Job {
        Job {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: None,
            status: Some(JobStatus {
                start_time: Some(api_time(at(started))),
                conditions: Some(vec![JobCondition {
                    type_: kind.into(),
                    status: "True".into(),
                    ..JobCondition::default()
                }]),
                ..JobStatus::default()
            }),
        }
    }

    #[test]
    fn history_keeps_the_newest_of_each_kind() {
        let cj = cronjob("2026-11-25T10:00:30Z", None, None);
        let jobs = [
            done("a", "Complete", "2026-11-25T10:01:00Z"),
            done("b", "Complete", "2026-11-25T10:02:00Z"),
            done("c", "Complete", "2026-11-25T10:03:00Z"),
            done("d", "Complete", "2026-11-25T10:04:00Z"),
            done("e", "Failed", "2026-11-25T10:05:00Z"),
            done("f", "Failed", "2026-11-25T10:06:00Z"),
        ];
        let refs: Vec<&Job> = jobs.iter().collect();
        let names: Vec<&str> = beyond_history(&cj, &refs)
            .iter()
            .map(|j| j.metadata.name.as_deref().unwrap())
            .collect();
        assert_eq!(names, ["a", "e"]);
    }
}
