//! Durability: concurrent clients write, the server (or, on etcd, etcd itself) is killed with
//! SIGKILL mid-stream, and after a restart on the same data every acknowledged write is there,
//! on sled and on etcd.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tinykube_tests::ApiServer;

#[test]
fn acknowledged_writes_survive_kill_9() {
    storm_kill_restart(ApiServer::start().unwrap(), Victim::ApiServer);
}

#[test]
fn acknowledged_writes_survive_kill_9_on_etcd() {
    storm_kill_restart(ApiServer::start_on_etcd(&[]).unwrap(), Victim::ApiServer);
}

#[test]
fn acknowledged_writes_survive_kill_9_of_etcd() {
    storm_kill_restart(ApiServer::start_on_etcd(&[]).unwrap(), Victim::Etcd);
}

/// What the test kills mid-storm.
enum Victim {
    ApiServer,
    Etcd,
}

fn storm_kill_restart(mut server: ApiServer, victim: Victim) {
    let url = format!("{}/api/v1/namespaces/default/configmaps", server.url);
    let acked = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let mut writers = Vec::new();
    for w in 0..8 {
        let url = url.clone();
        let acked = acked.clone();
        writers.push(std::thread::spawn(move || {
            let http = reqwest::blocking::Client::new();
            for i in 0.. {
                let name = format!("w{w}-{i}");
                let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"i": i.to_string()}});
                match http.post(&url).json(&body).send() {
                    Ok(r) if r.status().as_u16() == 201 => {
                        let v: Value = match r.json() {
                            Ok(v) => v,
                            Err(_) => return,
                        };
                        let rv = v["metadata"]["resourceVersion"].as_str().unwrap_or("").to_string();
                        acked.lock().unwrap().push((name, rv));
                    }
                    _ => return,
                }
            }
        }));
    }
    // Let the writers run, then pull the plug.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while acked.lock().unwrap().len() < 400 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    match victim {
        Victim::ApiServer => server.kill9(),
        Victim::Etcd => server.etcd.as_mut().expect("on etcd").kill9(),
    }
    for w in writers {
        w.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() >= 100,
        "only {} writes were acknowledged",
        acked.len()
    );

    match victim {
        Victim::ApiServer => server.restart().unwrap(),
        // The API server stays up and follows etcd again once it is back.
        Victim::Etcd => server.etcd.as_mut().unwrap().restart().unwrap(),
    }
    let list: Value = server.http().get(&url).send().unwrap().json().unwrap();
    let stored: std::collections::HashMap<String, String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap().to_string(),
                i["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    for (name, rv) in &acked {
        assert_eq!(
            stored.get(name),
            Some(rv),
            "acknowledged write {name} at {rv} lost"
        );
    }
    // New writes continue after the highest revision ever handed out.
    let max_rv: u64 = acked
        .iter()
        .map(|(_, rv)| rv.parse::<u64>().unwrap())
        .max()
        .unwrap();
    let fresh: Value = server
        .http()
        .post(&url)
        .json(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after"}}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let rv: u64 = fresh["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv > max_rv);
}
