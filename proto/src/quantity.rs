//! Resource quantities (`100m`, `200Mi`, `1.5Gi`, `2e3`): parsing, arithmetic and canonical form.
