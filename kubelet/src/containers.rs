//! Container statuses as containerd-backed kubelets report them: image names normalized
//! (`docker.io/library/nginx:1.14.2`), stable image digests and container IDs, and the
//! waiting / running / terminated states of each stage.

use k8s_openapi::api::core::v1::{ContainerState, ContainerStateWaiting, ContainerStatus, Pod};

/// Containers waiting in `ContainerCreating`.
pub(crate) fn creating(pod: &Pod) -> Vec<ContainerStatus> {
    pod.spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .map(|c| ContainerStatus {
            name: c.name.clone(),
            image: normalize_image(c.image.as_deref().unwrap_or("")),
            ready: false,
            started: Some(false),
            state: Some(ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some("ContainerCreating".into()),
                    message: None,
                }),
                ..Default::default()
            }),
            last_state: Some(ContainerState::default()),
            ..Default::default()
        })
        .collect()
}

/// `nginx:1.14.2` → `docker.io/library/nginx:1.14.2`, as containerd reports image names.
pub fn normalize_image(image: &str) -> String {
    let (first, _) = image.split_once('/').unwrap_or((image, ""));
    let has_registry =
        image.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    let mut full = if has_registry {
        image.to_string()
    } else if image.contains('/') {
        format!("docker.io/{image}")
    } else {
        format!("docker.io/library/{image}")
    };
    let last = full.rsplit('/').next().unwrap_or("");
    if !last.contains(':') && !last.contains('@') {
        full.push_str(":latest");
    }
    full
}

/// `docker.io/library/nginx@sha256:…`: a stable digest derived from the image name.
pub fn image_id(image: &str) -> String {
    let full = normalize_image(image);
    let repo = match full.rsplit_once(':') {
        Some((r, tag)) if !tag.contains('/') => r.to_string(),
        _ => full.clone(),
    };
    let repo = repo.split('@').next().unwrap_or("").to_string();
    format!("{repo}@sha256:{}", crate::hash::hex(&[full.as_bytes()], 4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_names_as_containerd_reports_them() {
        let cases = [
            ("nginx", "docker.io/library/nginx:latest"),
            ("nginx:1.14.2", "docker.io/library/nginx:1.14.2"),
            ("bitnami/redis:7", "docker.io/bitnami/redis:7"),
            ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9"),
            ("localhost:5000/app", "localhost:5000/app:latest"),
        ];
        for (image, want) in cases {
            assert_eq!(normalize_image(image), want);
        }
        assert!(image_id("nginx:1.14.2").starts_with("docker.io/library/nginx@sha256:"));
        assert_eq!(
            image_id("nginx").len(),
            "docker.io/library/nginx@sha256:".len() + 64
        );
    }
}
