//! Patches as the API server applies them: JSON patch (RFC 6902), JSON merge patch (RFC 7386)
//! and Kubernetes strategic merge patch.
