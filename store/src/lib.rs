//! sled-backed versioned key-value store: revisions, compare-and-swap, watch with resume.
