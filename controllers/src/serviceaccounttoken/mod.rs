//! The tokens controller (upstream's `serviceaccount-token`): every Secret of type
//! `kubernetes.io/service-account-token` naming a ServiceAccount in its
//! `kubernetes.io/service-account.name` annotation gets `data.token` (a legacy JWT signed with
//! `--service-account-private-key-file`), `data.ca.crt` (`--root-ca-file`) and `data.namespace`,
//! and the account's uid in `kubernetes.io/service-account.uid`; a Secret whose account is gone
//! (or has another uid than the annotation says) is deleted, as upstream.
//!
//! Wiring only: Secret notifications and deletions of ServiceAccounts enqueue `NS/SECRET`;
//! [`sync`] does one pass, [`jwt`] signs.

pub mod jwt;
pub mod sync;

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use tinykube_client::reflector::{Notification, Store};
use tinykube_proto::serviceaccount::{NAME_ANNOTATION, TOKEN_SECRET_TYPE};

use crate::context::{forward, Context, BY_NAMESPACE};
use crate::util::run_workers;
use crate::workqueue::WorkQueue;

/// Upstream's ConcurrentSATokenSyncs default.
const WORKERS: usize = 5;

pub struct Controller {
    pub ctx: Arc<Context>,
    pub secrets: Store<Secret>,
    pub accounts: Store<ServiceAccount>,
    pub queue: WorkQueue,
    pub signer: jwt::Signer,
    /// PEM of the cluster CA (`ca.crt`), empty without `--root-ca-file`.
    pub root_ca: String,
}

/// The ServiceAccount a token Secret names, if it is one.
pub fn account_of(secret: &Secret) -> Option<&str> {
    if secret.type_.as_deref() != Some(TOKEN_SECRET_TYPE) {
        return None;
    }
    secret
        .metadata
        .annotations
        .as_ref()?
        .get(NAME_ANNOTATION)
        .map(String::as_str)
        .filter(|n| !n.is_empty())
}

/// Read the signing key and the CA, subscribe to Secrets and ServiceAccounts, and return the
/// controller's run future. Without a key the controller stays idle, as upstream's.
pub fn start(ctx: &Arc<Context>) -> BoxFuture<'static, ()> {
    let Some(key_file) = &ctx.options.service_account_private_key_file else {
        tracing::info!(
            "serviceaccount-token: no --service-account-private-key-file, controller disabled"
        );
        return Box::pin(async {});
    };
    let signer = match jwt::Signer::from_file(key_file) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "serviceaccount-token: controller disabled");
            return Box::pin(async {});
        }
    };
    let root_ca = match &ctx.options.root_ca_file {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(pem) => pem,
            Err(e) => {
                tracing::error!(path = %path.display(), error = %e, "serviceaccount-token: cannot read the root CA");
                return Box::pin(async {});
            }
        },
        None => String::new(),
    };
    let secret_events = ctx.secrets.subscribe();
    let account_events = ctx.serviceaccounts.subscribe();
    let c = Arc::new(Controller {
        ctx: ctx.clone(),
        secrets: ctx.secrets.store(),
        accounts: ctx.serviceaccounts.store(),
        queue: ctx.queue(),
        signer,
        root_ca,
    });
    Box::pin(async move {
        let (Some(secret_events), Some(account_events)) = (secret_events, account_events) else {
            tracing::error!("serviceaccount-token controller started after the informers");
            return;
        };
        let on_secrets = {
            let (c, r) = (c.clone(), c.clone());
            forward(
                secret_events,
                move |n| c.on_secret(n),
                move || r.enqueue_all(),
            )
        };
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
                c.secrets.clone().wait_ready().await;
                c.accounts.clone().wait_ready().await;
                c.enqueue_all();
                let s = c.clone();
                run_workers(
                    "serviceaccount-token",
                    c.queue.clone(),
                    WORKERS,
                    move |key| {
                        let s = s.clone();
                        async move { s.sync(&key).await }
                    },
                )
                .await;
            }
        };
        tokio::join!(on_secrets, on_accounts, run);
    })
}

impl Controller {
    fn enqueue(&self, secret: &Secret) {
        if account_of(secret).is_none() {
            return;
        }
        if let (Some(ns), Some(name)) = (&secret.metadata.namespace, &secret.metadata.name) {
            self.queue.add(&format!("{ns}/{name}"));
        }
    }

    fn on_secret(&self, n: Notification<Secret>) {
        if let Notification::Add(s) | Notification::Update { new: s, .. } = n {
            self.enqueue(&s);
        }
    }

    /// A deleted (or replaced) account: its token Secrets go.
    fn on_account(&self, n: Notification<ServiceAccount>) {
        let sa = match n {
            Notification::Delete(sa) => sa,
            Notification::Add(sa) => sa,
            _ => return,
        };
        let (Some(ns), Some(name)) = (&sa.metadata.namespace, &sa.metadata.name) else {
            return;
        };
        for secret in self.secrets.by_index(BY_NAMESPACE, ns) {
            if account_of(&secret) == Some(name.as_str()) {
                self.enqueue(&secret);
            }
        }
    }

    fn enqueue_all(&self) {
        for secret in self.secrets.list() {
            self.enqueue(&secret);
        }
    }
}
