//! The custom resource figures of `tinykube-bench apiserver`: durable creates/s of custom objects
//! against a CRD with a realistic schema (pruning, defaulting, schema and CEL validation on every
//! create), and the time from a CRD's create request to the first custom object accepted.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde_json::{json, Value};

use crate::{create_many, percentile, start_apiserver};

/// The group of the CRD the creates/s figure uses; the install figure uses `gN.` + this.
const GROUP: &str = "bench.tinykube.io";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
/// How long to wait between attempts at the first custom object.
const RETRY: Duration = Duration::from_millis(1);
/// When to give up on a CRD that never serves its objects.
const GIVE_UP: Duration = Duration::from_secs(30);

/// A namespaced `Widget` kind in `group`: typed spec fields with a pattern, an enum, bounds and
/// defaults, a CEL rule across two fields, a status subresource and a printer column.
fn widget_crd(group: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                      "listKind": "WidgetList", "shortNames": ["wd"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["image", "replicas"],
                            "x-kubernetes-validations": [{
                                "rule": "self.replicas <= self.maxReplicas",
                                "message": "replicas must not exceed maxReplicas"}],
                            "properties": {
                                "image": {"type": "string", "maxLength": 128,
                                          "pattern": "^[a-z0-9]+([./:-][a-z0-9]+)*$"},
                                "replicas": {"type": "integer", "minimum": 0, "maximum": 100},
                                "maxReplicas": {"type": "integer", "minimum": 1,
                                                "maximum": 100, "default": 10},
                                "mode": {"type": "string", "enum": ["Fast", "Safe"],
                                         "default": "Safe"},
                                "schedule": {"type": "string",
                                             "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"}
                            }
                        },
                        "status": {
                            "type": "object",
                            "properties": {"readyReplicas": {"type": "integer", "minimum": 0}}
                        }
                    }
                }}
            }]
        }
    })
}

/// A Widget of `group` that exercises every stage: two defaults to fill in (`maxReplicas`,
/// `mode`), one unknown field to prune (`spec.colour`), two patterns, bounds and the CEL rule.
fn widget_in(group: &str, name: &str) -> Value {
    json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
           "metadata": {"name": name, "labels": {"app": "bench"}},
           "spec": {"image": "registry.example.com/widget:1.0", "replicas": 3,
                    "schedule": "*/5 * * * *", "colour": "blue"}})
}

fn widget(name: &str) -> Value {
    widget_in(GROUP, name)
}

fn widgets_path(group: &str) -> String {
    format!("/apis/{group}/v1/namespaces/default/widgets")
}

/// One CRD install: POST the definition, then try to create a Widget every [`RETRY`] until the
/// server accepts one. Returns the time from before the CRD's POST to the object's 201, and the
/// statuses answered before it.
async fn install_to_first_object(
    http: &reqwest::Client,
    url: &str,
    group: &str,
) -> Result<(Duration, BTreeSet<u16>)> {
    let start = Instant::now();
    let resp = http
        .post(format!("{url}{CRDS}"))
        .json(&widget_crd(group))
        .send()
        .await?;
    if resp.status().as_u16() != 201 {
        bail!(
            "CRD create returned {}: {}",
            resp.status(),
            resp.text().await?
        );
    }
    let target = format!("{url}{}", widgets_path(group));
    let mut refused = BTreeSet::new();
    loop {
        let resp = http
            .post(&target)
            .json(&widget_in(group, "first"))
            .send()
            .await?;
        let status = resp.status().as_u16();
        if status == 201 {
            let took = start.elapsed();
            let stored: Value = resp.json().await?;
            // The figure is only what it claims if the schema was applied to this first object.
            if stored["spec"]["mode"] != "Safe" || stored["spec"].get("colour").is_some() {
                bail!("the first Widget of {group} was not defaulted and pruned: {stored}");
            }
            return Ok((took, refused));
        }
        refused.insert(status);
        if start.elapsed() > GIVE_UP {
            bail!("no Widget of {group} accepted after {GIVE_UP:?} (answers: {refused:?})");
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// Both custom resource figures, on an API server of their own (fresh data dir, as the
/// ConfigMap figure has), so that the figures after them are measured as before.
pub(crate) async fn bench_custom(creates: usize, clients: usize, installs: usize) -> Result<()> {
    let server = start_apiserver().await?;
    let http = reqwest::Client::new();

    let mut times = Vec::new();
    let mut refused = BTreeSet::new();
    for i in 0..installs {
        let (took, statuses) =
            install_to_first_object(&http, &server.url, &format!("g{i}.{GROUP}")).await?;
        times.push(took);
        refused.extend(statuses);
    }

    // The figure's own CRD, installed the same way (its first object is not counted).
    install_to_first_object(&http, &server.url, GROUP).await?;
    let rate = create_many(
        &server.url,
        &widgets_path(GROUP),
        creates,
        clients,
        "widget",
        widget,
    )
    .await?;
    println!(
        "apiserver custom object creates: {rate:.0}/s  (workload: {creates} Widgets, {clients} concurrent clients, ack after fsync; each pruned, defaulted, checked against its schema's patterns, enum and bounds and one CEL rule)"
    );

    if installs == 0 {
        return Ok(());
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let answers = if refused.is_empty() {
        "none refused".to_string()
    } else {
        format!("answers before it: {refused:?}")
    };
    println!(
        "apiserver CRD create to first custom object: median {:.1} ms, max {:.1} ms  (workload: {installs} CRDs created one after another, a Widget create retried every {} ms until accepted; {answers})",
        ms(percentile(&times, 0.5)),
        ms(times.last().copied().unwrap_or_default()),
        RETRY.as_millis()
    );
    Ok(())
}
