//! The event recorder: core/v1 Events as upstream's legacy recorder writes them (`source`,
//! `count`, first/last timestamps), with repeats of the same event aggregated by bumping `count`.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde_json::json;

use crate::api::{Api, Patch};
use crate::config::Client;
use crate::error::ClientError;

/// `Normal` or `Warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Identity of an event for aggregation: the same object, type, reason and message.
type Key = (String, String, String, String, &'static str, String, String);

/// Records events for one component (e.g. `replicaset-controller`).
pub struct Recorder {
    client: Client,
    component: String,
    host: Option<String>,
    clock: tinykube_clock::Clock,
    seen: Mutex<HashMap<Key, (String, String, i32)>>,
}

impl Recorder {
    pub fn new(client: Client, component: &str, host: Option<&str>) -> Self {
        Recorder {
            client,
            component: component.to_string(),
            host: host.map(str::to_string),
            clock: tinykube_clock::Clock::real(),
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Stamp events with `clock` (the real clock by default).
    pub fn with_clock(mut self, clock: tinykube_clock::Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Record that `reason` happened to `regarding`. A repeat of the same event bumps the
    /// existing Event's `count` and `lastTimestamp` instead of creating another.
    pub async fn record(
        &self,
        regarding: &ObjectReference,
        kind: EventType,
        reason: &str,
        message: &str,
    ) -> Result<(), ClientError> {
        let key: Key = (
            regarding.namespace.clone().unwrap_or_default(),
            regarding.kind.clone().unwrap_or_default(),
            regarding.name.clone().unwrap_or_default(),
            regarding.uid.clone().unwrap_or_default(),
            kind.as_str(),
            reason.to_string(),
            message.to_string(),
        );
        let previous = self.seen.lock().ok().and_then(|s| s.get(&key).cloned());
        let written = self
            .write(regarding, kind, reason, message, previous)
            .await?;
        if let Ok(mut s) = self.seen.lock() {
            s.insert(key, written);
        }
        Ok(())
    }

    /// Count one more occurrence into `previous` (an Event this recorder wrote: its name,
    /// namespace and count), bumping `count` and `lastTimestamp` and setting `message`; when there
    /// is none, or it was deleted meanwhile, create a new Event as upstream's legacy recorder
    /// writes it. Returns what was written, for the next occurrence.
    pub async fn write(
        &self,
        regarding: &ObjectReference,
        kind: EventType,
        reason: &str,
        message: &str,
        previous: Option<(String, String, i32)>,
    ) -> Result<(String, String, i32), ClientError> {
        let now = self.clock.timestamp();
        if let Some((name, ns, count)) = previous {
            let bumped = count + 1;
            let patch = json!({"count": bumped, "lastTimestamp": Time(now), "message": message});
            let events: Api<Event> = Api::namespaced(self.client.clone(), &ns);
            match events.patch(&name, &Patch::Merge(patch)).await {
                Ok(_) => return Ok((name, ns, bumped)),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        let namespace = regarding
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".into());
        let name = format!(
            "{}.{:x}",
            regarding.name.as_deref().unwrap_or("event"),
            now.as_nanosecond()
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            involved_object: regarding.clone(),
            reason: Some(reason.to_string()),
            message: Some(message.to_string()),
            type_: Some(kind.as_str().to_string()),
            count: Some(1),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            source: Some(EventSource {
                component: Some(self.component.clone()),
                host: self.host.clone(),
            }),
            reporting_component: Some(self.component.clone()),
            reporting_instance: Some(self.host.clone().unwrap_or_default()),
            ..Default::default()
        };
        Api::<Event>::namespaced(self.client.clone(), &namespace)
            .create(&event)
            .await?;
        Ok((name, namespace, 1))
    }
}
