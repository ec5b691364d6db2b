//! Every page of `labs/` replayed against a fresh `tinykube up`: each command block runs and
//! prints what the page shows (see `tests/src/lab.rs` for the format and `labs/README.md`).

use std::path::PathBuf;

fn labs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../labs")
}

fn replay(page: &str) {
    if let Err(e) = tinykube_tests::lab::replay(&labs_dir().join(page)) {
        panic!("{e:#}");
    }
}

/// The lab pages, each its own test so that they run side by side.
macro_rules! labs {
    ($($test:ident => $page:literal,)*) => {
        $(
            #[test]
            fn $test() {
                replay($page);
            }
        )*

        #[test]
        fn every_page_is_replayed() {
            let listed = [$($page),*];
            let mut pages: Vec<String> = std::fs::read_dir(labs_dir())
                .expect("labs/")
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.ends_with(".md") && n != "README.md")
                .collect();
            pages.sort();
            for page in &pages {
                assert!(listed.contains(&page.as_str()), "labs/{page} has no test in tests/tests/labs.rs");
            }
        }
    };
}

labs! {
    nodes_and_labels => "01-nodes-and-labels.md",
    node_affinity => "02-node-affinity.md",
    pod_affinity => "03-pod-affinity.md",
    taints_and_resources => "04-taints-and-resources.md",
    daemonsets => "05-daemonsets.md",
    multiple_schedulers => "06-multiple-schedulers.md",
    static_pods => "07-static-pods.md",
    scheduler_config => "08-scheduler-config.md",
    drain => "09-drain.md",
    node_failure => "10-node-failure.md",
    preemption => "11-preemption.md",
    extending_the_api => "12-extending-the-api.md",
    services => "13-services.md",
    limits_and_quotas => "14-limits-and-quotas.md",
    probes_restarts_logs => "15-probes-restarts-logs.md",
    jobs_and_cronjobs => "16-jobs-and-cronjobs.md",
    statefulsets => "17-statefulsets.md",
    resource_usage_and_autoscaling => "18-resource-usage-and-autoscaling.md",
}
