//! One step of a StatefulSet's reconcile as a plan, upstream's updateStatefulSet without its
//! side effects: the pods to create (in ordinal order, and with `OrderedReady` one at a time,
//! each after its predecessors are Running, Ready and Available), the failed ones to replace,
//! the condemned ones (beyond `replicas`) to delete from the highest ordinal down, and the
//! RollingUpdate step (highest ordinal first, down to the partition, within maxUnavailable).
//! Also the status counts. Pure, with table tests.

/// What the planner knows of one existing pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodState {
    pub ordinal: i32,
    /// The revision name in its `controller-revision-hash` label.
    pub revision: String,
    /// Has a phase (upstream's isCreated).
    pub created: bool,
    /// Succeeded or Failed.
    pub finished: bool,
    pub pending: bool,
    pub terminating: bool,
    /// Running with the Ready condition.
    pub ready: bool,
    /// Ready for minReadySeconds.
    pub available: bool,
    /// Identity labels, storage and claim owners as they should be.
    pub consistent: bool,
}

impl PodState {
    /// Upstream's isHealthy: running, ready and not terminating.
    fn healthy(&self) -> bool {
        self.created && self.ready && !self.terminating
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    OnDelete,
    /// `partition` (0 by default); `max_unavailable` already scaled to pods (at least 1)
    /// when set; `rolling_update` is whether `rollingUpdate` is given at all.
    RollingUpdate {
        rolling_update: bool,
        partition: i32,
        max_unavailable: Option<i32>,
    },
}

/// The inputs of one step.
#[derive(Debug, Clone)]
pub struct Input {
    pub replicas: i32,
    pub start: i32,
    /// `podManagementPolicy: Parallel`.
    pub parallel: bool,
    pub strategy: Strategy,
    pub current_revision: String,
    pub update_revision: String,
    /// `status.currentReplicas`, for RollingUpdate without `rollingUpdate`.
    pub current_replicas: i32,
    /// The set is being deleted: nothing but status.
    pub deleting: bool,
    pub pods: Vec<PodState>,
}

/// Which revision a new pod is made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Current,
    Update,
}

/// Why a pod is deleted (the log line and nothing else differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// It finished (Failed or Succeeded) and is recreated.
    Finished,
    /// Its ordinal is beyond `replicas`.
    ScaleDown,
    /// It is of an old revision.
    Update,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Create the claims, then the pod.
    Create {
        ordinal: i32,
        from: Which,
    },
    /// Create any claim a pending pod is missing.
    EnsureClaims {
        ordinal: i32,
    },
    /// Put back identity labels and claim owner references.
    Repair {
        ordinal: i32,
    },
    /// Set a condemned pod's claim owners for the retention policy.
    FixClaims {
        ordinal: i32,
    },
    Delete {
        ordinal: i32,
        why: Why,
    },
}

/// Which revision a new pod at `ordinal` gets (upstream's newVersionedStatefulSetPod).
pub fn revision_for(input: &Input, ordinal: i32) -> Which {
    match input.strategy {
        Strategy::RollingUpdate {
            rolling_update: false,
            ..
        } if ordinal < input.start + input.current_replicas => Which::Current,
        Strategy::RollingUpdate {
            rolling_update: true,
            partition,
            ..
        } if ordinal < input.start + partition => Which::Current,
        _ => Which::Update,
    }
}

/// The actions of one step, in order.
pub fn plan(input: &Input) -> Vec<Action> {
    let mut out = Vec::new();
    if input.deleting {
        return out;
    }
    let monotonic = !input.parallel;
    let end = input.start + input.replicas.max(0);
    let slot = |o: i32| input.pods.iter().find(|p| p.ordinal == o);
    let mut condemned: Vec<&PodState> = input
        .pods
        .iter()
        .filter(|p| p.ordinal < input.start || p.ordinal >= end)
        .collect();
    condemned.sort_by_key(|p| std::cmp::Reverse(p.ordinal));
    // The lowest ordinal among unhealthy pods, kept or condemned.
    let first_unhealthy = input
        .pods
        .iter()
        .filter(|p| !p.healthy())
        .map(|p| p.ordinal)
        .min();

    // Each kept replica in order; in OrderedReady mode stop at the first that is not done.
    for ordinal in input.start..end {
        let Some(pod) = slot(ordinal) else {
            out.push(Action::Create {
                ordinal,
                from: revision_for(input, ordinal),
            });
            if monotonic {
                return out;
            }
            continue;
        };
        if pod.finished {
            if !pod.terminating {
                out.push(Action::Delete {
                    ordinal,
                    why: Why::Finished,
                });
            }
            if monotonic {
                return out;
            }
            continue;
        }
        if pod.pending {
            out.push(Action::EnsureClaims { ordinal });
        }
        if monotonic && (pod.terminating || !pod.ready || !pod.available) {
            return out;
        }
        if !pod.consistent {
            out.push(Action::Repair { ordinal });
        }
    }

    // Condemned pods, highest ordinal first: one at a time in OrderedReady mode.
    for pod in &condemned {
        out.push(Action::FixClaims {
            ordinal: pod.ordinal,
        });
    }
    for pod in &condemned {
        if pod.terminating {
            if monotonic {
                return out;
            }
            continue;
        }
        let first = first_unhealthy == Some(pod.ordinal);
        if monotonic && (!pod.ready || !pod.available) && !first {
            return out;
        }
        out.push(Action::Delete {
            ordinal: pod.ordinal,
            why: Why::ScaleDown,
        });
        if monotonic {
            return out;
        }
    }

    let Strategy::RollingUpdate {
        partition,
        max_unavailable,
        ..
    } = input.strategy
    else {
        return out;
    };
    let old = |p: &PodState| p.revision != input.update_revision && !p.terminating;
    let update_min = input.start + partition.max(0);
    match max_unavailable {
        None => {
            for ordinal in (update_min..end).rev() {
                let Some(pod) = slot(ordinal) else {
                    // Being created this step: not healthy yet.
                    return out;
                };
                if old(pod) {
                    out.push(Action::Delete {
                        ordinal,
                        why: Why::Update,
                    });
                    return out;
                }
                if !pod.healthy() {
                    return out;
                }
            }
        }
        Some(max) => {
            let unavailable = (input.start..end)
                .filter(|o| !slot(*o).is_some_and(PodState::healthy))
                .count() as i32;
            let mut room = max.max(1) - unavailable;
            for ordinal in (update_min..end).rev() {
                if room <= 0 {
                    break;
                }
                if let Some(pod) = slot(ordinal).filter(|p| old(p)) {
                    out.push(Action::Delete {
                        ordinal: pod.ordinal,
                        why: Why::Update,
                    });
                    room -= 1;
                }
            }
        }
    }
    out
}

/// The status counts of the pods (upstream's computeReplicaStatus).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub replicas: i32,
    pub ready: i32,
    pub available: i32,
    pub current: i32,
    pub updated: i32,
}

pub fn counts(pods: &[PodState], current: &str, update: &str) -> Counts {
    let mut c = Counts::default();
    for p in pods.iter().filter(|p| p.created) {
        c.replicas += 1;
        if p.ready {
            c.ready += 1;
            if p.available {
                c.available += 1;
            }
        }
        if !p.terminating {
            c.current += i32::from(p.revision == current);
            c.updated += i32::from(p.revision == update);
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pod at `ordinal` of revision `rev` in state `s`: R ready and available, P pending,
    /// N running not ready, T terminating (ready), F failed.
    fn pod(ordinal: i32, rev: &str, s: char) -> PodState {
        PodState {
            ordinal,
            revision: rev.into(),
            created: true,
            finished: s == 'F',
            pending: s == 'P',
            terminating: s == 'T',
            ready: s == 'R' || s == 'T',
            available: s == 'R' || s == 'T',
            consistent: true,
        }
    }

    fn input(replicas: i32, parallel: bool, strategy: Strategy, pods: Vec<PodState>) -> Input {
        Input {
            replicas,
            start: 0,
            parallel,
            strategy,
            current_revision: "a".into(),
            update_revision: "a".into(),
            current_replicas: 0,
            deleting: false,
            pods,
        }
    }

    const ROLLING: Strategy = Strategy::RollingUpdate {
        rolling_update: true,
        partition: 0,
        max_unavailable: None,
    };

    fn create(ordinal: i32) -> Action {
        Action::Create {
            ordinal,
            from: Which::Update,
        }
    }

    fn delete(ordinal: i32, why: Why) -> Action {
        Action::Delete { ordinal, why }
    }

    #[test]
    fn ordered_ready_scaling() {
        use Why::*;
        let table: Vec<(&str, Input, Vec<Action>)> = vec![
            (
                "first pod",
                input(3, false, ROLLING, vec![]),
                vec![create(0)],
            ),
            (
                "waits for web-0 to be ready",
                input(3, false, ROLLING, vec![pod(0, "a", 'N')]),
                vec![],
            ),
            (
                "pending pods get their claims",
                input(3, false, ROLLING, vec![pod(0, "a", 'P')]),
                vec![Action::EnsureClaims { ordinal: 0 }],
            ),
            (
                "then web-1",
                input(3, false, ROLLING, vec![pod(0, "a", 'R')]),
                vec![create(1)],
            ),
            (
                "a gap is filled first",
                input(3, false, ROLLING, vec![pod(0, "a", 'R'), pod(2, "a", 'R')]),
                vec![create(1)],
            ),
            (
                "a failed pod is replaced",
                input(2, false, ROLLING, vec![pod(0, "a", 'F'), pod(1, "a", 'R')]),
                vec![delete(0, Finished)],
            ),
            (
                "scale down from the top, one at a time",
                input(
                    1,
                    false,
                    ROLLING,
                    vec![pod(0, "a", 'R'), pod(1, "a", 'R'), pod(2, "a", 'R')],
                ),
                vec![
                    Action::FixClaims { ordinal: 2 },
                    Action::FixClaims { ordinal: 1 },
                    delete(2, ScaleDown),
                ],
            ),
            (
                "waits for the terminating one",
                input(
                    1,
                    false,
                    ROLLING,
                    vec![pod(0, "a", 'R'), pod(1, "a", 'R'), pod(2, "a", 'T')],
                ),
                vec![
                    Action::FixClaims { ordinal: 2 },
                    Action::FixClaims { ordinal: 1 },
                ],
            ),
            (
                "an unhealthy kept pod blocks scale down",
                input(1, false, ROLLING, vec![pod(0, "a", 'N'), pod(1, "a", 'R')]),
                vec![],
            ),
            (
                "the first unhealthy condemned pod may go",
                input(
                    1,
                    false,
                    ROLLING,
                    vec![pod(0, "a", 'R'), pod(1, "a", 'N'), pod(2, "a", 'R')],
                ),
                vec![
                    Action::FixClaims { ordinal: 2 },
                    Action::FixClaims { ordinal: 1 },
                    delete(2, ScaleDown),
                ],
            ),
            (
                "parallel creates all at once",
                input(3, true, ROLLING, vec![pod(0, "a", 'N')]),
                vec![create(1), create(2)],
            ),
            (
                "parallel deletes all condemned",
                input(0, true, ROLLING, vec![pod(0, "a", 'N'), pod(1, "a", 'R')]),
                vec![
                    Action::FixClaims { ordinal: 1 },
                    Action::FixClaims { ordinal: 0 },
                    delete(1, ScaleDown),
                    delete(0, ScaleDown),
                ],
            ),
            (
                "inconsistent pods are repaired",
                input(
                    1,
                    false,
                    ROLLING,
                    vec![PodState {
                        consistent: false,
                        ..pod(0, "a", 'R')
                    }],
                ),
                vec![Action::Repair { ordinal: 0 }],
            ),
        ];
        for (name, input, want) in table {
            assert_eq!(plan(&input), want, "{name}");
        }
        let mut deleting = input(3, false, ROLLING, vec![]);
        deleting.deleting = true;
        assert!(plan(&deleting).is_empty());
    }

    #[test]
    fn rolling_updates_go_from_the_top_down_to_the_partition() {
        use Why::Update;
        let rolling = |partition, max_unavailable| Strategy::RollingUpdate {
            rolling_update: true,
            partition,
            max_unavailable,
        };
        let with_update = |mut i: Input| {
            i.update_revision = "b".into();
            i
        };
        let three = |a: char, b: char, c: char, r: [&str; 3]| {
            vec![pod(0, r[0], a), pod(1, r[1], b), pod(2, r[2], c)]
        };
        let table: Vec<(&str, Input, Vec<Action>)> = vec![
            (
                "highest ordinal first",
                with_update(input(
                    3,
                    false,
                    rolling(0, None),
                    three('R', 'R', 'R', ["a", "a", "a"]),
                )),
                vec![delete(2, Update)],
            ),
            (
                "then the next once the new one is healthy",
                with_update(input(
                    3,
                    false,
                    rolling(0, None),
                    three('R', 'R', 'R', ["a", "a", "b"]),
                )),
                vec![delete(1, Update)],
            ),
            (
                "waits for the updated pod to be healthy",
                with_update(input(
                    3,
                    true,
                    rolling(0, None),
                    three('R', 'R', 'N', ["a", "a", "b"]),
                )),
                vec![],
            ),
            (
                "a partition keeps lower ordinals",
                with_update(input(
                    3,
                    false,
                    rolling(2, None),
                    three('R', 'R', 'R', ["a", "a", "b"]),
                )),
                vec![],
            ),
            (
                "maxUnavailable 2 deletes two at once",
                with_update(input(
                    3,
                    true,
                    rolling(0, Some(2)),
                    three('R', 'R', 'R', ["a", "a", "a"]),
                )),
                vec![delete(2, Update), delete(1, Update)],
            ),
            (
                "counting the unavailable ones",
                with_update(input(
                    3,
                    true,
                    rolling(0, Some(2)),
                    three('R', 'R', 'N', ["a", "a", "b"]),
                )),
                vec![delete(1, Update)],
            ),
            (
                "OnDelete never deletes",
                with_update(input(
                    3,
                    false,
                    Strategy::OnDelete,
                    three('R', 'R', 'R', ["a", "a", "a"]),
                )),
                vec![],
            ),
        ];
        for (name, input, want) in table {
            assert_eq!(plan(&input), want, "{name}");
        }
    }

    #[test]
    fn new_pods_below_the_partition_keep_the_current_revision() {
        let mut i = input(
            4,
            true,
            Strategy::RollingUpdate {
                rolling_update: true,
                partition: 2,
                max_unavailable: None,
            },
            vec![],
        );
        i.start = 10;
        let revisions: Vec<Which> = (10..14).map(|o| revision_for(&i, o)).collect();
        assert_eq!(
            revisions,
            vec![Which::Current, Which::Current, Which::Update, Which::Update]
        );
        i.strategy = Strategy::OnDelete;
        assert_eq!(revision_for(&i, 10), Which::Update);
        i.strategy = Strategy::RollingUpdate {
            rolling_update: false,
            partition: 0,
            max_unavailable: None,
        };
        i.current_replicas = 1;
        assert_eq!(
            (revision_for(&i, 10), revision_for(&i, 11)),
            (Which::Current, Which::Update)
        );
    }

    #[test]
    fn status_counts() {
        let pods = vec![
            pod(0, "a", 'R'),
            pod(1, "b", 'N'),
            pod(2, "b", 'T'),
            PodState {
                available: false,
                ..pod(3, "b", 'R')
            },
        ];
        assert_eq!(
            counts(&pods, "a", "b"),
            Counts {
                replicas: 4,
                ready: 3,
                available: 2,
                current: 1,
                updated: 2
            }
        );
    }
}
