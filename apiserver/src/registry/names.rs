//! Name and metadata validation shared by every kind: DNS-1123 subdomains and labels,
//! label and annotation syntax, as upstream's apimachinery validation words it.
