//! The ServiceAccount controller (upstream's `serviceaccount`, in `serviceaccounts-controller`):
//! every active namespace has a `default` ServiceAccount, created again when deleted.
//!
//! Wiring only: namespace notifications and deletions of a `default` account enqueue the
//! namespace; [`sync`] does one pass.

pub mod sync;

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use tinykube_client::reflector::{Notification, Store};

use crate::context::{forward, route, Context};
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

/// The accounts every namespace gets.
pub const ACCOUNTS: &[&str] = &["default"];
/// Upstream's ConcurrentServiceAccountSyncs default.
const WORKERS: usize = 5;

pub struct Controller {
    pub ctx: Arc<Context>,
    pub namespaces: Store<Namespace>,
    pub accounts: Store<ServiceAccount>,
    pub queue: WorkQueue,
}

/// Subscribe to namespaces and ServiceAccounts and return the controller's run future.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let namespace_events = ctx.namespaces.subscribe();
    let account_events = ctx.serviceaccounts.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        namespaces: ctx.namespaces.store(),
        accounts: ctx.serviceaccounts.store(),
        queue: ctx.queue(),
    });
    Box::pin(async move {
        let (Some(namespace_events), Some(account_events)) = (namespace_events, account_events)
        else {
            tracing::error!("serviceaccount controller started after the informers");
            return;
        };
        let on_namespaces = route(
            namespace_events,
            &c,
            Controller::on_namespace,
            Controller::enqueue_all,
        );
        let on_accounts = {
            let (c, r) = (c.clone(), c.clone());
            forward(
                account_events,
                move |n| c.on_account(n),
                move || r.enqueue_all(),
            )
        };
        let run = {
            let c = c.clone();
            async move {
                c.namespaces.clone().wait_ready().await;
                c.accounts.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers("serviceaccount", c.queue.clone(), WORKERS, move |key| {
                    let s = s.clone();
                    async move { s.sync(&key).await }
                })
                .await;
            }
        };
        tokio::join!(on_namespaces, on_accounts, run);
    })
}

impl Controller {
    fn on_namespace(&self, n: Notification<Namespace>) {
        if let Notification::Add(ns) | Notification::Update { new: ns, .. } = n {
            if let Some(name) = &ns.metadata.name {
                self.queue.add(name);
            }
        }
    }

    /// A deleted account the controller keeps brings its namespace back to the queue.
    fn on_account(&self, n: Notification<ServiceAccount>) {
        if let Notification::Delete(sa) = n {
            let name = sa.metadata.name.as_deref().unwrap_or("");
            if ACCOUNTS.contains(&name) {
                if let Some(ns) = &sa.metadata.namespace {
                    self.queue.add(ns);
                }
            }
        }
    }

    fn enqueue_all(&self) {
        for ns in self.namespaces.list() {
            if let Some(name) = &ns.metadata.name {
                self.queue.add(name);
            }
        }
    }
}
